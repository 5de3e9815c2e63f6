#!/usr/bin/env bash
# Benchmark of the proving search: nodes, seconds and nodes per second of `kalah solve` on 6x4
# and 6x5 under empty and standard capture, over databases of 16, 22 and 30 seeds (the levels
# 0..=N of one database, `--db-upto N`), with one and with two threads, in one table.
#
# usage: scripts/bench-search.sh [DB_ROOT]
#   DB_ROOT   directory holding one database directory per rule set, named by the rules' slug
#             (h6-empty-owner-either, h6-standard-owner-either), each with the levels up to the
#             largest size asked (default data/db). Stored databases (`--codec stored`) are
#             probed from their maps; compressed ones are decoded into memory first (not timed).
# environment:
#   BUILD_UPTO=N       first build (or complete) the databases up to N seeds, stored
#   SEEDS="4 5"        boards (6 houses);  CAPTURES="empty standard";  DBS="16 22 30"
#   THREADS="1 2"      thread counts;  TT_MB  the table's largest size in MiB (default: solve's
#                      own, a sixteenth of memory; the table starts at 16 MiB and grows)
#   EXTRA="..."        more flags for solve (e.g. --deepening off, to see what a step is worth)
#   LIMIT=600          seconds a run may take: a run stopped there prints the nodes it had
#                      searched and "stopped" (Ctrl-C, as a user would)
#   SKIP="6x5/16"      runs left out (board/db pairs), by default the ones far beyond LIMIT
# One line per run: board, capture, database seeds, threads, value, nodes, seconds of search,
# nodes per second, wall seconds of the whole process, its peak memory. Node counts do not
# depend on the machine (for one thread they are the same on every run); times need a quiet
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:-data/db}
command -v jq >/dev/null || { echo "bench-search.sh needs jq (apt-get install jq)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bench-search.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
timing=$(mktemp); err=$(mktemp); trap 'rm -f "$timing" "$err"' EXIT
cargo build --release --quiet
kalah=target/release/kalah
skip=" ${SKIP-6x5/16} "
printf '%-5s %-9s %3s %3s %6s %14s %9s %9s %8s %8s\n' board capture db thr value nodes search_s Mnodes/s wall_s peak_MiB
for capture in ${CAPTURES:-empty standard}; do
    dir="$root/h6-$capture-owner-either"
    if [[ -n "${BUILD_UPTO:-}" ]]; then
        "$kalah" db build --houses 6 --capture "$capture" --upto "$BUILD_UPTO" --codec stored --dir "$dir" >&2
    fi
    [[ -d "$dir" ]] || { echo "no database $dir (set BUILD_UPTO)" >&2; exit 1; }
    for seeds in ${SEEDS:-4 5}; do
      for n in ${DBS:-16 22 30}; do
        [[ "$skip" == *" 6x$seeds/$n "* ]] && continue
        for threads in ${THREADS:-1 2}; do
            set +e
            # shellcheck disable=SC2086
            json=$(/usr/bin/time -o "$timing" -f '%e %M' timeout -s INT "${LIMIT:-600}" \
                "$kalah" solve --houses 6 --seeds "$seeds" --capture "$capture" --db "$dir" \
                --db-upto "$n" ${TT_MB:+--tt-mb "$TT_MB"} --threads "$threads" --json ${EXTRA:-} 2>"$err")
            status=$?
            set -e
            read -r wall peak_kib < <(tail -n 1 "$timing")
            if [[ $status == 0 ]]; then
                jq -r '[(.value|tostring), (.nodes|tostring), (.seconds*100|round/100|tostring),
                        (.nodes_per_second/1e6*100|round/100|tostring)] | @tsv' <<<"$json"
            else
                # Interrupted: the nodes searched so far, from the message on stderr.
                nodes=$(grep -o 'after [0-9]* nodes' "$err" | grep -o '[0-9]*' || echo '?')
                printf 'stopped\t%s\t>%s\t-\n' "$nodes" "${LIMIT:-600}"
            fi | awk -F'\t' -v b="6x$seeds" -v c="$capture" -v d="$n" -v t="$threads" \
                    -v w="$wall" -v m="$((peak_kib / 1024))" \
                '{printf "%-5s %-9s %3s %3s %6s %14s %9s %9s %8s %8s\n", b,c,d,t,$1,$2,$3,$4,w,m}'
        done
      done
    done
done
