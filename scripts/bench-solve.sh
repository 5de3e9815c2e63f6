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
#   REPEAT=N       run each board N times (default 1), one line each
#   WARM=1         before the runs of a rule set, drop every database under DB_ROOT from the page
#                  cache and read this rule set's once in order (default), so that every run starts from the same state:
#                  the files in the page cache as a build, a convert or a `cat` leaves them. (Pages
#                  first brought in by a search's random faults come in small units, and later
#                  runs then spend more time in page faults: 6x4 takes 0.5-0.7 s instead of 0.3 s.)
#                  WARM=0 leaves the page cache as it is.
# Prints one line per run: value, best move, nodes, seconds of search, seconds opening (and
# loading) the database, wall seconds of the whole process, its peak memory, nodes per second.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-data/db}
command -v jq >/dev/null || { echo "bench-solve.sh needs jq (apt-get install jq)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bench-solve.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
timing=$(mktemp); trap 'rm -f "$timing"' EXIT
cargo build --release --quiet
kalah=target/release/kalah
printf '%-9s %5s %6s %6s %12s %9s %7s %7s %8s %9s %3s\n' capture seeds value best nodes search_s load_s wall_s peak_MiB Mnodes/s db
for capture in ${CAPTURES:-empty standard}; do
    dir="$root/h6-$capture-owner-either"
    if [[ -n "${BUILD_UPTO:-}" ]]; then
        "$kalah" db build --houses 6 --capture "$capture" --upto "$BUILD_UPTO" --dir "$dir" >&2
    fi
    db=()
    if [[ -d "$dir" ]]; then
        db=(--db "$dir")
        if [[ "${WARM:-1}" == 1 ]]; then
            # Every database under the root leaves the page cache (memory stays free for this
            # one: a search started while the system reclaims pages runs up to 3 times slower),
            # then this one is read in order.
            for f in "$root"/*/level-*.kdb; do
                dd if="$f" iflag=nocache count=0 status=none
            done
            cat "$dir"/level-*.kdb >/dev/null
        fi
    fi
    for seeds in ${SEEDS:-3 4 5}; do
      for _ in $(seq "${REPEAT:-1}"); do
        # shellcheck disable=SC2086
        json=$(/usr/bin/time -o "$timing" -f '%e %M' "$kalah" solve --houses 6 --seeds "$seeds" --capture "$capture" "${db[@]}" \
            --tt-mb "${TT_MB:-$(( seeds >= 5 ? 1024 : 128 ))}" --threads "${THREADS:-2}" --json ${EXTRA:-})
        read -r wall peak_kib <"$timing"
        jq -r --arg c "$capture" --arg s "$seeds" --arg w "$wall" --arg m "$((peak_kib / 1024))" \
            '[$c, $s, (.value|tostring), (.best|map(tostring)|join(",")), (.nodes|tostring),
              (.seconds*1000|round/1000|tostring), (.database_load_seconds*100|round/100|tostring),
              $w, $m, (.nodes_per_second/1e6*100|round/100|tostring),
              (.database_seeds|tostring)] | @tsv' <<<"$json" |
            awk -F'\t' '{printf "%-9s %5s %6s %6s %12s %9s %7s %7s %8s %9s %3s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
      done
    done
done
