// The explorer page of `kalah serve`, driven in the system's Chromium by playwright-core, as a
// person uses it: load the start, see every move's value, play a line, go back, load a
// position by its notation, reject a bad one, let the perfect opponent answer. Values on the
// page are compared with the API's answers for the same positions. A screenshot is kept.
//
// Usage: node explorer.test.mjs   (env: KALAH_BIN, the kalah binary; CHROMIUM, the browser;
// SCREENSHOT, where the picture goes)

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
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

// A database of 6-house boards up to 16 seeds, where `serve` looks for it.
const work = mkdtempSync(join(tmpdir(), "kalah-explorer-"));
const db = join(work, "db");
// Stored uncompressed: the server probes it from its map with nothing to decode. (The 6x4
// start needs a larger database for all six values within seconds: over 22 seeds one thread
// searches 112 M nodes for them, about a minute; so the pictured board is 6x3.)
const built = spawnSync(bin, ["db", "build", "--houses", "6", "--upto", "16", "--codec", "stored", "--dir", join(db, "h6-standard-owner-either")]);
if (built.status !== 0) throw new Error("db build failed: " + built.stderr);

const server = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--db", db, "--budget-ms", "5000"]);
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
  await page.waitForSelector("#summary");

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
  await page.screenshot({ path: shot, fullPage: true });

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
  await page.waitForFunction(() => document.querySelector("#notation").value === "S: 0 0 1 2 0 1 [20] / 1 0 0 2 0 1 [8]");
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
  await page.waitForFunction(() => document.querySelector("#notation").value.startsWith("S:"), null, { timeout: 20000 });
  check(true, "the perfect opponent answered");
} finally {
  await browser.close();
  server.kill();
}

console.log(`${passes} passed, ${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
