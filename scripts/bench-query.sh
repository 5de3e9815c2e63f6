#!/usr/bin/env bash
# `kalah query` as a player uses it on 6-seed Kalah: the time to open the default database
# (a position it holds), and the time of each of COUNT mid-game positions (30 to 42 seeds in the
# houses, reached by random play from the start with a fixed seed), with the median.
#
#   scripts/bench-query.sh [COUNT] [SEED]
#
# Environment: KALAH (default target/release/kalah), DB (the database directory; default: the
# default database of standard Kalah, built in the search form up to 22 seeds if missing),
# BUDGET (seconds per position, default 60). Positions, sources and seconds are printed, one a
# line, then the summary. Run it on a quiet machine: each figure is one process, wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-24}
SEED=${2:-1}
KALAH=${KALAH:-target/release/kalah}
BUDGET=${BUDGET:-60}
RULES=(--houses 6 --seeds 6 --capture standard)
if [ ! -x "$KALAH" ]; then
    cargo build --release -q -p kalah
fi
if [ -z "${DB:-}" ]; then
    DB=data/db/h6-standard-owner-either
    "$KALAH" query "${RULES[@]}" --build-upto 22 --no-book "1 0 0 0 0 0 / 0 0 0 0 0 1" >/dev/null
fi

# A small generator of random numbers in bash (the same positions for the same SEED).
state=$SEED
rand() { state=$(( (state * 1103515245 + 12345) % 2147483648 )); R=$(( state / 65536 )); }

now() { date +%s.%N; }

positions=()
while [ ${#positions[@]} -lt "$COUNT" ]; do
    pos="S: 6 6 6 6 6 6 [0] / 6 6 6 6 6 6 [0]"
    while :; do
        json=$("$KALAH" moves "${RULES[@]}" --json "$pos")
        n=$(jq '.moves | length' <<<"$json")
        [ "$n" -gt 0 ] || break
        rand
        i=$(( R % n ))
        next=$(jq -r ".moves[$i].position" <<<"$json")
        ends=$(jq -r ".moves[$i].ends_game" <<<"$json")
        [ "$ends" = false ] || break
        seeds=$(jq -r ".moves[$i].short" <<<"$json" | tr '/' ' ' | tr ' ' '\n' | awk '{s+=$1} END {print s}')
        pos=$next
        if [ "$seeds" -le 42 ]; then
            if [ "$seeds" -ge 30 ]; then
                positions+=("$pos")
            fi
            break
        fi
    done
done

t0=$(now)
"$KALAH" query "${RULES[@]}" --db "$DB" --no-book --json "S: 1 0 0 0 0 0 [30] / 0 0 0 0 0 1 [40]" >/dev/null
t1=$(now)
open=$(echo "$t1 - $t0" | bc -l)
printf 'open the database and answer a position it holds: %.3f s (%s)\n' "$open" "$DB"

times=()
for pos in "${positions[@]}"; do
    t0=$(now)
    out=$("$KALAH" query "${RULES[@]}" --db "$DB" --no-book --budget "$BUDGET" --json "$pos")
    t1=$(now)
    s=$(echo "$t1 - $t0" | bc -l)
    times+=("$s")
    printf '%-50s %-8s %8.3f s\n' "$pos" "$(jq -r .source <<<"$out")" "$s"
done
printf '%s\n' "${times[@]}" | sort -g | awk -v n="${#times[@]}" '
    { t[NR] = $1 }
    END {
        m = (n % 2) ? t[(n + 1) / 2] : (t[n / 2] + t[n / 2 + 1]) / 2
        printf "%d mid-game positions: median %.3f s, min %.3f s, max %.3f s\n", n, m, t[1], t[n]
    }'
