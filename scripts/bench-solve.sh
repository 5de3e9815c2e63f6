#!/usr/bin/env bash
# Benchmark of `kalah solve` on 6-house Kalah: 3, 4 and 5 seeds under empty and standard capture.
#
# usage: scripts/bench-solve.sh [DB_ROOT]
#   DB_ROOT   directory holding one database directory per rule set, named by the rules' slug
#             (h6-empty-owner-either, h6-standard-owner-either); default data/db. Rule sets
#             without a database there are solved by search alone.
# environment:
#   BUILD_UPTO=N   first build (or complete) the databases up to N seeds with `kalah db build`
#   SEEDS="3 4 5"  which boards to solve;  CAPTURES="empty standard"
#   TT_MB          transposition table size (default 128 MiB below 5 seeds, 1024 from 5);
#   THREADS=2      search threads
#   EXTRA="..."    more flags for solve (e.g. --all-moves)
# Prints one line per run: value, best move, nodes, seconds, nodes per second.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-data/db}
command -v jq >/dev/null || { echo "bench-solve.sh needs jq (apt-get install jq)" >&2; exit 1; }
cargo build --release --quiet
kalah=target/release/kalah
printf '%-9s %5s %6s %6s %12s %9s %10s %8s\n' capture seeds value best nodes seconds Mnodes/s db
for capture in ${CAPTURES:-empty standard}; do
    dir="$root/h6-$capture-owner-either"
    if [[ -n "${BUILD_UPTO:-}" ]]; then
        "$kalah" db build --houses 6 --capture "$capture" --upto "$BUILD_UPTO" --dir "$dir" >&2
    fi
    db=()
    if [[ -d "$dir" ]]; then
        db=(--db "$dir")
    fi
    for seeds in ${SEEDS:-3 4 5}; do
        # shellcheck disable=SC2086
        json=$("$kalah" solve --houses 6 --seeds "$seeds" --capture "$capture" "${db[@]}" \
            --tt-mb "${TT_MB:-$(( seeds >= 5 ? 1024 : 128 ))}" --threads "${THREADS:-2}" --json ${EXTRA:-})
        jq -r --arg c "$capture" --arg s "$seeds" \
            '[$c, $s, (.value|tostring), (.best|map(tostring)|join(",")), (.nodes|tostring),
              (.seconds*1000|round/1000|tostring), (.nodes_per_second/1e6*100|round/100|tostring),
              (.database_seeds|tostring)] | @tsv' <<<"$json" |
            awk -F'\t' '{printf "%-9s %5s %6s %6s %12s %9s %10s %8s\n", $1,$2,$3,$4,$5,$6,$7,$8}'
    done
done
