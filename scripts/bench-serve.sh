#!/usr/bin/env bash
# Load test of `kalah serve` on loopback: requests per second and latency percentiles for
# positions answered from the database, with wrk (apt-get install wrk).
#
# Usage: scripts/bench-serve.sh [SECONDS] [CONNECTIONS]
# Env:   KALAH (binary; default: build target/release/kalah), THREADS (wrk threads, default 2)
#
# Builds (once) a 6-house standard database up to 16 seeds in a temporary directory, starts the
# server on a free port, and runs wrk over a set of database positions (a Lua script picks a
# different position per request), then one fixed start position beyond the database with a
# small budget is timed with curl. Prints wrk's summary and the figures in one line.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-10}
CONNS=${2:-32}
THREADS=${THREADS:-2}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
if [ -z "${KALAH:-}" ]; then
    cargo build --release -q -p kalah --bin kalah
    KALAH=target/release/kalah
fi
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
"$KALAH" db build --houses 6 --upto 16 --dir "$work/db/h6-standard-owner-either" >/dev/null 2>&1
"$KALAH" serve --db "$work/db" --addr 127.0.0.1:0 > "$work/serve.out" 2>&1 &
pid=$!
for _ in $(seq 100); do
    grep -qs "listening" "$work/serve.out" && break
    sleep 0.1
done
addr=$(sed -n 's|.*http://\([^/]*\)/.*|\1|p' "$work/serve.out" | head -1)
[ -n "$addr" ] || { cat "$work/serve.out"; exit 1; }
# Database positions: 16 seeds or fewer, South to move, several shapes.
cat > "$work/positions.lua" <<'EOF'
local positions = {
  "S: 1 2 0 3 1 1 [20] / 2 0 1 3 1 1 [16]",
  "S: 0 0 4 0 2 2 [22] / 1 1 1 1 1 1 [18]",
  "S: 3 3 0 0 1 1 [24] / 0 2 2 2 0 0 [14]",
  "S: 1 1 1 1 1 1 [30] / 1 1 1 1 1 1 [6]",
  "S: 0 2 0 2 0 2 [20] / 2 0 2 0 2 0 [16]",
  "S: 5 0 0 0 0 3 [18] / 0 0 4 0 0 4 [14]",
  "S: 0 0 0 0 1 9 [10] / 1 1 1 1 1 1 [20]",
  "S: 2 2 2 2 2 2 [18] / 1 1 0 0 1 1 [14]",
}
local i = 0
local function enc(s)
  return (s:gsub("[^%w]", function(c) return string.format("%%%02X", string.byte(c)) end))
end
request = function()
  i = i + 1
  return wrk.format("GET", "/api/v1/position?position=" .. enc(positions[(i % #positions) + 1]))
end
EOF
# Warm-up: the first request of a rule set opens its database (decoded into memory).
curl -s "http://$addr/api/v1/position?position=S:%201%201%201%201%201%201%20%5B30%5D%20/%201%201%201%201%201%201%20%5B6%5D" >/dev/null
echo "== wrk: $SECS s, $CONNS connections, $THREADS threads, database positions"
wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency -s "$work/positions.lua" "http://$addr" | tee "$work/wrk.out"
# A sanity check of what was served.
curl -s "http://$addr/api/v1/position?position=S:%201%201%201%201%201%201%20%5B30%5D%20/%201%201%201%201%201%201%20%5B6%5D" \
    | grep -q '"source":"database"' || { echo "unexpected answer" >&2; exit 1; }
rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
p50=$(awk '$1=="50%" {print $2}' "$work/wrk.out")
p99=$(awk '$1=="99%" {print $2}' "$work/wrk.out")
errors=$(awk '/Non-2xx|Socket errors/ {print}' "$work/wrk.out")
echo "== beyond the database: 6x4 start with budget_ms=2000"
t0=$(date +%s.%N)
curl -s "http://$addr/api/v1/position?houses=6&seeds=4&budget_ms=2000" > "$work/far.json"
t1=$(date +%s.%N)
far=$(python3 -c "import json;d=json.load(open('$work/far.json'));print(d['source'], d['lower'], d['upper'])")
printf 'requests/s %s | p50 %s | p99 %s | errors: %s | 6x4 start in %.2f s: %s\n' \
    "$rps" "$p50" "$p99" "${errors:-none}" "$(echo "$t1 - $t0" | bc)" "$far"
