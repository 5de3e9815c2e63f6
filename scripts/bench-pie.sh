#!/usr/bin/env bash
# What `prove --pie` saves against `prove --first-turns`: both prove the value under the pie
# rule of one game from an empty ledger (the start first, then the first turns), one thread, the
# same database and estimates. Prints, for the start alone and for each mode, the turn
# questions asked, the nodes and seconds, and the pie value with each first turn's bounds.
# Node and question counts do not depend on the machine; seconds do (time on a quiet machine).
#
# usage: scripts/bench-pie.sh [UPTO] [rule flags...]
#   UPTO: the database's largest level (default 22; built in a temporary directory, removed at
#   the end). Rule flags default to 6-house, 4-seed standard capture
#   (`--houses 6 --seeds 4 --capture standard`). ESTIMATE=D sets --estimate-depth (default 16),
#   TT_MB the table (default 1024).
set -euo pipefail
cd "$(dirname "$0")/.."
UPTO=${1:-22}
shift $(( $# < 1 ? $# : 1 ))
RULES=("$@")
if [[ ${#RULES[@]} -eq 0 ]]; then RULES=(--houses 6 --seeds 4 --capture standard); fi
ESTIMATE=${ESTIMATE:-16}
TT_MB=${TT_MB:-1024}
cargo build --release -q -p kalah
BIN=$PWD/target/release/kalah
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "== database: levels 0..=$UPTO, ${RULES[*]}"
echo "   machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN" db build --upto "$UPTO" --codec search --dir "$WORK/db" --json "${RULES[@]}" >/dev/null

for mode in start pie first-turns; do
  FLAGS=()
  if [[ $mode != start ]]; then FLAGS=(--"$mode"); fi
  "$BIN" prove "${RULES[@]}" --db "$WORK/db" --dir "$WORK/$mode" --threads 1 --tt-mb "$TT_MB" \
    --estimate-depth "$ESTIMATE" --log-every 0 --json "${FLAGS[@]}" >"$WORK/$mode.json" 2>/dev/null
  QUESTIONS=$(grep -c '"kind":"turn"' "$WORK/$mode/ledger.jsonl" || true)
  python3 - "$mode" "$QUESTIONS" "$WORK/$mode.json" <<'EOF'
import json, sys
mode, questions, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
v = json.load(open(path))
print(f"== {mode}: value {v['value']:+d}, {questions} turn questions, {v['nodes'] / 1e6:.2f} M nodes "
      f"(the start's included), {v['units']} units, {v['seconds']:.1f} s")
pie = v.get("pie")
if pie:
    print(f"   pie rule: {pie['lower']:+d}..{pie['upper']:+d}")
for t in v.get("first_turns") or []:
    lo, hi = t["lower"], t["upper"]
    print(f"   {t['moves']:6} " + (f"{lo:+d}" if lo == hi else f"{lo:+d}..{hi:+d}"))
EOF
done
