// The explorer page of `kalah serve`, driven in the system's Chromium by playwright-core, as a
// person uses it: load the start, see every move's value, play a line, go back, load a
// position by its notation, reject a bad one, let the perfect opponent answer. Values on the
// page are compared with the API's answers for the same positions. A screenshot of the 6x4
// start with its six proven values is kept.
//
// Usage: node explorer.test.mjs   (env: KALAH_BIN, the kalah binary; CHROMIUM, the browser;
// SCREENSHOT, where the picture goes)

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
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
const server = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--db", db, "--budget-ms", "240000", "--max-budget-ms", "240000"]);
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
  check(kalah4.source === "search" && kalah4.value !== null && kalah4.moves.length === 6, "the API proves the 6x4 start: " + JSON.stringify(kalah4).slice(0, 300));
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
} finally {
  await browser.close();
  server.kill();
  // The 2.8 GB database goes with the test.
  rmSync(work, { recursive: true, force: true });
}

console.log(`${passes} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
