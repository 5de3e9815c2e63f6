// The explorer page of `kalah serve`, driven in the system's Chromium by playwright-core, as a
// person uses it: load the start, see every move's value, play a line, go back, load a
// position by its notation, reject a bad one, let the perfect opponent answer, copy the move
// list, reopen the game from the page's address (and fall back from a bad one), read where the
// values come from (the opening book, bounds). Values on the page are compared with the API's
// answers for the same positions. A screenshot of the 6x4 start with its six proven values is
// kept.
//
// Usage: node explorer.test.mjs   (env: KALAH_BIN, the kalah binary; CHROMIUM, the browser;
// SCREENSHOT, where the picture goes)

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..", "..");
const bin = process.env.KALAH_BIN || join(root, "target", "debug", "kalah");
const browserPath = process.env.CHROMIUM || "/usr/bin/chromium";
const shot = process.env.SCREENSHOT || join(root, "target", "explorer.png");

let failures = 0;
let passes = 0;
function check(cond, what) {
  if (cond) {
    passes++;
  } else {
    failures++;
    console.error("FAILED: " + what);
  }
}

// A database of 6-house boards up to 26 seeds, where `serve` looks for it: over it the six
// opening moves of 4-seed Kalah, the page's first board, are proven in seconds (18 M nodes on
// two threads; over 22 seeds it takes 112 M on one, about a minute). Stored uncompressed: the
// server probes it from its map with nothing to decode. About 70 s to build, 2.8 GB on disk.
const work = mkdtempSync(join(tmpdir(), "kalah-explorer-"));
const db = join(work, "db");
const built = spawnSync(bin, ["db", "build", "--houses", "6", "--upto", "26", "--codec", "stored", "--dir", join(db, "h6-standard-owner-either")]);
if (built.status !== 0) throw new Error("db build failed: " + built.stderr);

// A budget long enough for the 6x4 start's search on one thread, the page's first request.
// The committed opening books: the 6x3 and 6x4 starts are answered from them at once.
const server = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--db", db, "--books", join(root, "data", "books"), "--budget-ms", "240000", "--max-budget-ms", "240000"]);
const addr = await new Promise((ok, fail) => {
  let text = "";
  server.stdout.on("data", (d) => {
    text += d;
    const m = text.match(/http:\/\/([^/\s]+)\//);
    if (m) ok(m[1]);
  });
  server.on("exit", (code) => fail(new Error("serve exited with " + code)));
  setTimeout(() => fail(new Error("serve did not start")), 20000);
});
const base = `http://${addr}`;

async function api(params) {
  const r = await fetch(`${base}/api/v1/position?` + new URLSearchParams(params));
  return r.json();
}

const browser = await chromium.launch({ executablePath: browserPath, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 600 } });
  await page.goto(base + "/");

  // The first board: 4-seed Kalah (6 houses), every opening move with its proven value, as the
  // API gives them (the page's request runs the search; the API's comes from the same search
  // again).
  await page.waitForSelector("#summary", { timeout: 240000 });
  const kalah4 = await api({ houses: 6, seeds: 4 });
  check(kalah4.source === "book" && kalah4.value !== null && kalah4.moves.length === 6, "the opening book answers the 6x4 start: " + JSON.stringify(kalah4).slice(0, 300));
  // The book's values are those of the results table (data/results.json): each opening move
  // is worth its first turn's margin, or the best margin of the first turns it begins.
  const results = JSON.parse(readFileSync(join(root, "data", "results.json"), "utf8"));
  // Every recorded game of 3 to 5 seeds whose first turns are all known: the book answers its
  // start at once (standard and empty capture first, then the other rule books).
  const games = results.entries.filter((e) => e.houses === 6 && e.seeds <= 5 && e.turns && e.turns.length > 0);
  // The games whose first turns a proof ledger holds, all exact (6x5 standard and empty
  // capture), as `kalah results --json` derives them from data/proofs.
  const table = spawnSync(bin, ["results", "--json", "--file", join(root, "data", "results.json"), "--proofs", join(root, "data", "proofs")], { encoding: "utf8" });
  check(table.status === 0, `kalah results --json: status ${table.status}, ${table.error || table.stderr}`);
  for (const g of JSON.parse(table.stdout || '{"games": []}').games) {
    const turns = g.ledger_turns || [];
    if (g.houses === 6 && g.seeds <= 5 && !games.some((e) => e.seeds === g.seeds && e.capture === g.capture && e.leftover === g.leftover && e.end === g.end)
        && turns.length > 0 && g.lower === g.upper && turns.every((t) => t.lower === t.upper)) {
      games.push({ houses: 6, seeds: g.seeds, capture: g.capture, leftover: g.leftover, end: g.end, value: g.lower,
        turns: turns.map((t) => ({ moves: t.moves.split(" ").map((m) => Number(m.slice(1))), margin: t.lower })) });
    }
  }
  for (const seeds of [3, 4, 5]) {
    for (const capture of ["standard", "empty"]) {
      check(games.some((e) => e.seeds === seeds && e.capture === capture && e.leftover === "owner" && e.end === "either"), `6x${seeds} ${capture}: the results table holds every first turn`);
    }
  }
  for (const entry of games) {
    const name = `6x${entry.seeds} ${entry.capture} ${entry.leftover} ${entry.end}`;
    const isKalah4 = entry.seeds === 4 && entry.capture === "standard" && entry.leftover === "owner" && entry.end === "either";
    const t0 = Date.now();
    const answer = isKalah4 ? kalah4 : await api({ houses: 6, seeds: entry.seeds, capture: entry.capture, leftover: entry.leftover, end: entry.end });
    const ms = Date.now() - t0;
    check(answer.source === "book" && answer.value === entry.value, `${name}: the book's start value ${answer.value} is the results table's ${entry.value} (${answer.source})`);
    check(isKalah4 || ms < 1000, `${name}: answered in ${ms} ms`);
    for (const m of answer.moves) {
      const margins = entry.turns.filter((t) => t.moves[0] === m.house).map((t) => t.margin);
      check(m.value === Math.max(...margins), `${name}: house ${m.house} is worth ${m.value}, the results table says ${Math.max(...margins)}`);
    }
  }
  // The 6-seed starts: the proven values of the ledgers (exact where exact, bounds otherwise).
  for (const [capture, leftover, end, value] of [["standard", "owner", "either", 4], ["empty", "owner", "either", 2], ["empty", "emptier", "either", 4], ["standard", "emptier", "mover", 4]]) {
    const t0 = Date.now();
    const answer = await api({ houses: 6, seeds: 6, capture, leftover, end });
    const ms = Date.now() - t0;
    check(answer.source === "book" && answer.value === value && ms < 1000, `6x6 ${capture} ${leftover} ${end}: the book gives ${answer.value} (${answer.source}, ${ms} ms), the ledger ${value}`);
    check(answer.moves.every((m) => m.lower <= m.upper && m.upper <= value), `6x6 ${capture} ${leftover} ${end}: every move at most ${value}: ` + JSON.stringify(answer.moves).slice(0, 300));
  }
  const shown4 = await page.$$eval(".house.playable", (els) => els.map((e) => [e.dataset.house, e.querySelector(".v").textContent]));
  check(shown4.length === 6, "six playable houses at the 6x4 start, got " + shown4.length);
  for (const m of kalah4.moves) {
    const want = m.value > 0 ? "+" + m.value : String(m.value);
    const got = shown4.find(([h]) => Number(h) === m.house);
    check(got && got[1] === want, `6x4: house ${m.house} shows ${want} (got ${got && got[1]})`);
  }
  await page.screenshot({ path: shot, fullPage: true });

  // 6 houses, 3 seeds: every move of South with its value, as the API gives them.
  await page.selectOption("#seeds", "3");
  await page.waitForFunction(() => document.querySelector("#notation").value.includes("3 3 3 3 3 3 [0] /"));
  await page.waitForSelector("#summary");
  const start = await api({ houses: 6, seeds: 3 });
  check(start.value !== null && start.moves.length === 6, "the API values the 6x3 start: " + JSON.stringify(start).slice(0, 200));
  const shown = await page.$$eval(".house.playable", (els) => els.map((e) => [e.dataset.house, e.querySelector(".v").textContent]));
  check(shown.length === 6, "six playable houses at the start, got " + shown.length);
  for (const m of start.moves) {
    const want = m.value > 0 ? "+" + m.value : String(m.value);
    const got = shown.find(([h]) => Number(h) === m.house);
    check(got && got[1] === want, `house ${m.house} shows ${want} (got ${got && got[1]})`);
  }
  const summary = await page.textContent("#summary");
  check(summary.includes("value"), "the summary gives the value: " + summary);

  // Play South's house 1 (no extra turn from 3 seeds in house 1): North to move.
  const move = start.moves.find((m) => m.house === 1);
  await page.click('.house.playable[data-side="S"][data-house="1"]');
  await page.waitForFunction((next) => document.querySelector("#notation").value === next, move.next);
  const after = await api({ houses: 6, seeds: 3, position: move.next });
  const northMoves = await page.$$eval('.house.playable[data-side="N"]', (els) => els.length);
  check(northMoves === after.moves.length, `North's ${after.moves.length} moves are playable (got ${northMoves})`);

  // Back to the start, forward again.
  await page.click("#back");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p, start.position);
  await page.click("#forward");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p, move.next);

  // A position typed in the notation, then a bad one: an error, the board kept.
  await page.fill("#notation", "S: 0 0 1 2 0 1 [20] / 1 0 0 2 0 1 [8]");
  await page.click("#load");
  // The box already holds the typed text: wait for the answer itself (the board was North's).
  await page.waitForFunction(() => {
    const s = document.querySelector("#summary");
    return s !== null && s.textContent.startsWith("South to move");
  });
  const typed = await api({ houses: 6, seeds: 3, position: "S: 0 0 1 2 0 1 [20] / 1 0 0 2 0 1 [8]" });
  check(typed.source === "database", "the typed position comes from the database");
  const typedSummary = await page.textContent("#summary");
  check(typedSummary.includes(typed.value > 0 ? "+" + typed.value : String(typed.value)), "the typed position's value is shown: " + typedSummary);
  await page.fill("#notation", "1 2 3 / 4");
  await page.click("#load");
  await page.waitForSelector("#error");
  check((await page.textContent("#error")).length > 5, "a bad position is rejected with a message");

  // The perfect opponent: after South's move North answers at once; South is to move again.
  await page.click("#new");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p, start.position);
  await page.check("#opponent");
  const second = start.moves.find((m) => !m.extra_turn && m.house !== 1) || move;
  await page.click(`.house.playable[data-side="S"][data-house="${second.house}"]`);
  // Until the page answers, the box still holds the start (South to move): wait for a new one.
  await page.waitForFunction((p) => {
    const v = document.querySelector("#notation").value;
    return v.startsWith("S:") && v !== p;
  }, start.position, { timeout: 20000 });
  const answered = await page.inputValue("#notation");
  const afterSouth = await api({ houses: 6, seeds: 3, position: second.next });
  const reply = afterSouth.moves.find((m) => m.house === afterSouth.best[0]);
  check(afterSouth.to_move === "north" && (reply.next === answered || reply.extra_turn),
    `the perfect opponent answered with its best move (${afterSouth.best[0]}): ${answered}`);

  // The move list of the game so far, and the address that reopens it (a new 6x3 game, the
  // opponent off): South's move with an extra turn (same letter), South again, then North.
  await page.uncheck("#opponent");
  await page.click("#new");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p
    && document.querySelector("#moves").textContent === "", start.position);
  const m1 = start.moves.find((m) => m.extra_turn);
  const p1 = await api({ houses: 6, seeds: 3, position: m1.next });
  const m2 = p1.moves.find((m) => !m.extra_turn);
  const p2 = await api({ houses: 6, seeds: 3, position: m2.next });
  const m3 = p2.moves.find((m) => !m.extra_turn) || p2.moves[0];
  const line = [[m1, "S"], [m2, "S"], [m3, "N"]];
  for (const [m, side] of line) {
    await page.click(`.house.playable[data-side="${side}"][data-house="${m.house}"]`);
    await page.waitForFunction((next) => document.querySelector("#notation").value === next, m.next);
  }
  const played = `S${m1.house} S${m2.house} N${m3.house}`;
  const listed = async (pg) => (await pg.textContent("#moves")).trim();
  check(await listed(page) === played, `the move list reads "${played}" (got "${await listed(page)}")`);
  const hashOf = (url) => new URLSearchParams(new URL(url).hash.slice(1));
  let q = hashOf(page.url());
  check(q.get("houses") === "6" && q.get("seeds") === "3" && q.get("capture") === "standard"
    && q.get("leftover") === "owner" && q.get("end") === "either" && !q.has("position"),
    "the address carries the rules: " + page.url());
  check(page.url().includes(`moves=${m1.house},${m2.house},${m3.house}`), "the address carries the moves: " + page.url());
  check(await page.getAttribute("#link", "href") === page.url(), "the link on the page is the address");

  // Back: the list and the address lose the last move (shown ahead); forward brings it back.
  await page.click("#back");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p, m2.next);
  check(await listed(page) === `S${m1.house} S${m2.house}`, "after back the list reads " + await listed(page));
  check(hashOf(page.url()).get("moves") === `${m1.house},${m2.house}`, "after back the address has two moves: " + page.url());
  check((await page.textContent("#ahead")).trim() === `N${m3.house}`, "after back the move ahead is shown");
  await page.click("#forward");
  await page.waitForFunction((p) => document.querySelector("#notation").value === p, m3.next);
  check(await listed(page) === played && hashOf(page.url()).get("moves") === `${m1.house},${m2.house},${m3.house}`,
    "after forward the list and the address have the three moves again");

  // Copy: the clipboard gets the list (or, without one, the list is selected).
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  await page.click("#copy");
  await page.waitForFunction(() => document.querySelector("#copied").textContent !== "");
  const copied = await page.evaluate(async () => {
    try { return await navigator.clipboard.readText(); } catch (e) { return String(window.getSelection()); }
  });
  check(copied.trim() === played, `Copy takes "${played}" (got "${copied}")`);

  // The address, opened in a new page: the same rules, moves and position.
  const link = page.url();
  const reopened = await browser.newPage();
  await reopened.goto(link);
  await reopened.waitForFunction((p) => document.querySelector("#notation").value === p
    && document.querySelector("#summary") !== null, m3.next, { timeout: 60000 });
  check(await listed(reopened) === played, `the reopened page lists "${played}" (got "${await listed(reopened)}")`);
  check(await reopened.inputValue("#seeds") === "3" && await reopened.inputValue("#houses") === "6", "the reopened page has the rules");
  check(reopened.url() === link, "the reopened page keeps the address: " + reopened.url());
  check((await reopened.textContent("#notice")).trim() === "", "no message on a good address");
  // Back on the reopened page walks the same line.
  await reopened.click("#back");
  await reopened.waitForFunction((p) => document.querySelector("#notation").value === p, m2.next);
  await reopened.close();

  // A typed-in start with a move from it: the address carries the position too.
  const typedAt = "S: 0 0 1 2 0 1 [20] / 1 0 0 2 0 1 [8]";
  await page.fill("#notation", typedAt);
  await page.click("#load");
  await page.waitForFunction((p) => document.querySelector("#moves").textContent === ""
    && document.querySelector("#summary") && document.querySelector("#summary").textContent.startsWith("South to move"), typed.position);
  const tm = typed.moves[0];
  await page.click(`.house.playable[data-side="S"][data-house="${tm.house}"]`);
  await page.waitForFunction((next) => document.querySelector("#notation").value === next, tm.next);
  q = hashOf(page.url());
  check(q.get("position") === typed.position && q.get("moves") === String(tm.house), "the address carries the typed start and its move: " + page.url());
  const reopenedTyped = await browser.newPage();
  await reopenedTyped.goto(page.url());
  await reopenedTyped.waitForFunction((p) => document.querySelector("#notation").value === p
    && document.querySelector("#summary") !== null, tm.next);
  check(await listed(reopenedTyped) === `S${tm.house}`, "the reopened typed game lists its move");
  await reopenedTyped.close();

  // Bad addresses: a message, and the start (of the rules that could be read).
  for (const [bad, why] of [
    ["#houses=6&seeds=3&capture=bogus&moves=" + m1.house + ",9,1", "an unknown capture rule and an illegal move"],
    ["#houses=6&seeds=3&position=1%202%20%2F%203&moves=1", "a position that cannot be read"],
    ["#houses=6&seeds=3&moves=banana", "moves that are not houses"],
  ]) {
    const b = await browser.newPage();
    const errors = [];
    b.on("pageerror", (e) => errors.push(e.message));
    await b.goto(base + "/" + bad);
    await b.waitForFunction((p) => document.querySelector("#notation").value === p
      && document.querySelector("#summary") !== null, start.position, { timeout: 60000 });
    const msg = (await b.textContent("#notice")).trim();
    check(msg.length > 10, `${why}: a message (got "${msg}")`);
    check(await listed(b) === "", `${why}: no moves`);
    check(!hashOf(b.url()).has("moves") && hashOf(b.url()).get("capture") === "standard", `${why}: the address is the start's: ${b.url()}`);
    check((await b.$$(".house.playable")).length === start.moves.length && errors.length === 0, `${why}: the page works (${errors.join("; ")})`);
    await b.close();
  }

  // Sources: answers from the opening book, and bounds (the server's answers reshaped on their
  // way to the page). Bounds are shown as bounds, never as a value.
  let reshape = null;
  const mock = await browser.newPage();
  await mock.route("**/api/v1/position?**", async (route) => {
    const resp = await route.fetch();
    const body = await resp.json();
    if (reshape && resp.ok() && !body.over) reshape(body);
    await route.fulfill({ response: resp, json: body });
  });
  const widen = (source) => (body) => {
    body.source = source; body.value = null; body.margin = null; body.best = [];
    for (const m of body.moves) { m.value = null; m.lower -= 2; m.upper += 4; }
    body.lower = Math.max(...body.moves.map((m) => m.lower));
    body.upper = Math.max(...body.moves.map((m) => m.upper));
  };
  const sourceShown = async (label) => {
    await mock.waitForFunction((l) => {
      const s = document.querySelector("#source");
      return s !== null && s.textContent === l;
    }, label);
    return mock.textContent("#summary");
  };
  reshape = (body) => { if (body.value !== null) body.source = "book"; };
  await mock.goto(base + "/#houses=6&seeds=3");
  let said = await sourceShown("opening book");
  check(said.includes("value"), "an exact value from the opening book: " + said);
  const rangeRe = /^[+-]?\d+\.\.[+-]?\d+$/;
  for (const [source, label] of [["book", "proven bounds (opening book)"], ["bounds", "bounds so far, the search's time ran out"]]) {
    reshape = widen(source);
    await mock.click("#new");
    said = await sourceShown(label);
    const vs = await mock.$$eval(".house.playable .v", (els) => els.map((e) => e.textContent));
    check(vs.length === start.moves.length && vs.every((v) => rangeRe.test(v)), `${label}: every move shows bounds: ${vs.join(" ")}`);
    check(!said.includes("value") && /bounds [+-]?\d+\.\.[+-]?\d+/.test(said), `${label}: the summary gives bounds, not a value: ${said}`);
  }

  // The perfect opponent when only bounds are known: the move with the best proven lower bound,
  // said to be the best move proven so far.
  const north = await api({ houses: 6, seeds: 3, position: second.next });
  const chosen = [...north.moves].reverse().find((m) => !m.extra_turn);
  reshape = (body) => {
    widen("bounds")(body);
    if (body.to_move !== "north") return;
    for (const m of body.moves) {
      if (m.next === chosen.next) { m.lower = 30; m.upper = 31; } else { m.lower = -40 + m.house; m.upper = 40; }
    }
    body.lower = 30; body.upper = 40;
  };
  // (The page shows the start, as the last bounds answered it: South to move.)
  await mock.check("#opponent");
  await mock.click(`.house.playable[data-side="S"][data-house="${second.house}"]`);
  await mock.waitForFunction((p) => document.querySelector("#notation").value === p, chosen.next, { timeout: 20000 });
  check((await listed(mock)) === `S${second.house} N${chosen.house}`, `the opponent played N${chosen.house}: ${await listed(mock)}`);
  const note = (await mock.textContent("#info")) || "";
  check(note.includes("best move proven so far") && note.includes(`N${chosen.house}`), "the page says the opponent's move is the best proven so far: " + note);
  await mock.close();
} finally {
  await browser.close();
  server.kill();
  // The 2.8 GB database goes with the test.
  rmSync(work, { recursive: true, force: true });
}

console.log(`${passes} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
