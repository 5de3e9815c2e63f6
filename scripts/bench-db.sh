#!/usr/bin/env bash
# Benchmark of the endgame database: build every level up to N seeds (default 24) for 6-house
# standard Kalah, then print wall time, positions per second, peak memory, bytes on disk and the
# compression ratio, and the latency of random probes (cold process including open, and warm).
#
# usage: scripts/bench-db.sh [UPTO] [DIR] [extra rule flags...]
#   DIR defaults to a fresh temporary directory (removed at the end); give one to keep the
#   database or to time a resumed build. CODEC=grid|rans|zstd|stored chooses how levels are written
#   (default: the build's default).
set -euo pipefail
cd "$(dirname "$0")/.."
UPTO=${1:-24}
KEEP=1
if [[ $# -ge 2 ]]; then DIR=$2; else DIR=$(mktemp -d); KEEP=0; fi
shift $(( $# < 2 ? $# : 2 ))
RULES=("$@")
BUILD_FLAGS=()
if [[ -n "${CODEC:-}" ]]; then BUILD_FLAGS=(--codec "$CODEC"); fi
cargo build --release -q -p kalah -p probe-bench
BIN=target/release/kalah
PROBE=target/release/probe-bench
OUT=$(mktemp -d)
trap '[[ $KEEP == 1 ]] || rm -rf "$DIR"; rm -rf "$OUT"' EXIT

echo "== build: kalah db build --upto $UPTO --dir $DIR ${RULES[*]:-} ${BUILD_FLAGS[*]:-}"
echo "   machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -x /usr/bin/time ]]; then
  /usr/bin/time -v "$BIN" db build --upto "$UPTO" --dir "$DIR" --json "${RULES[@]}" "${BUILD_FLAGS[@]}" \
    >"$OUT/build.json" 2>"$OUT/time.txt"
  WALL=$(grep 'Elapsed (wall clock)' "$OUT/time.txt" | awk '{print $NF}' \
    | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  RSS_KB=$(grep 'Maximum resident set size' "$OUT/time.txt" | awk '{print $NF}')
  CPU=$(grep 'Percent of CPU' "$OUT/time.txt" | awk '{print $NF}')
else
  T0=$(date +%s.%N)
  "$BIN" db build --upto "$UPTO" --dir "$DIR" --json "${RULES[@]}" "${BUILD_FLAGS[@]}" >"$OUT/build.json" &
  PID=$!
  RSS_KB=0
  while kill -0 $PID 2>/dev/null; do
    R=$(awk '/VmHWM/ {print $2}' /proc/$PID/status 2>/dev/null || echo 0)
    [[ -n "$R" && "$R" -gt "$RSS_KB" ]] && RSS_KB=$R
    sleep 0.2
  done
  wait $PID
  WALL=$(echo "$(date +%s.%N) - $T0" | bc)
  CPU="?"
fi
python3 - "$OUT/build.json" "$WALL" "$RSS_KB" "$CPU" <<'PY'
import json, sys
b = json.load(open(sys.argv[1])); wall = float(sys.argv[2]); rss = int(sys.argv[3])
print(f"   levels built: {len(b['built'])}, kept: {len(b['skipped'])}")
print(f"   positions: {b['positions']:,} ({b['positions_built']:,} built)")
print(f"   wall: {wall:.1f} s (solving {b['solve_seconds']:.1f} s), CPU {sys.argv[4]}")
if wall > 0 and b['positions_built']:
    print(f"   positions/s: {b['positions_built']/wall/1e6:.2f} M/s wall, "
          f"{b['positions_built']/max(b['solve_seconds'],1e-9)/1e6:.2f} M/s while solving")
print(f"   peak memory: {rss/1024/1024:.2f} GiB")
print(f"   on disk: {b['bytes']:,} bytes = {100*b['bytes']/b['positions']:.1f}% of a byte per position")
PY

echo "== probes (random boards of level $UPTO)"
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null && echo "   (page cache dropped)" || true
T0=$(date +%s%N)
"$PROBE" --dir "$DIR" --count 1 "${RULES[@]}" >"$OUT/cold.json"
T1=$(date +%s%N)
python3 - "$OUT/cold.json" "$(( (T1 - T0) / 1000 ))" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); us = int(sys.argv[2])
print(f"   cold process (start, open all levels, one probe): "
      f"{us/1000:.1f} ms wall; in-process open {c['open_ms']:.2f} ms, first probe {c['first_probe_ms']:.3f} ms")
PY
# Warm: the level files in the page cache (as after any earlier use of the database), so that
# the figures are those of the probes, not of the disk.
cat "$DIR"/*.kdb >/dev/null
"$PROBE" --dir "$DIR" --count 200000 "${RULES[@]}" >"$OUT/warm.json"
python3 - "$OUT/warm.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
print(f"   warm random probes: {w['probes']:,}, median {w['median_us']:.2f} us, "
      f"p90 {w['p90_us']:.2f} us, p99 {w['p99_us']:.2f} us")
PY
