#!/usr/bin/env bash
# Benchmark of the search form of a database (`--codec search`): its size per level, the cost
# of opening it and of a random probe, and what its levels are worth to a proof.
#
# usage: scripts/bench-searchdb.sh SEARCH_DIR [STORED_DIR]
#   SEARCH_DIR  a database whose levels are in the search codec (say up to 33 seeds)
#   STORED_DIR  the same rules in another codec (say the 30-seed stored database), for the
#               proofs beside it (optional)
# environment:
#   CAPTURE=empty       rules of both databases (6 houses)
#   PROBES=1000000      random probes timed at the top level, after one untimed pass
#   PROOFS="5"          seeds of the boards proved to the end (6 houses)
#   UPTOS="30 33"       database sizes (levels 0..=N of SEARCH_DIR) of those proofs
#   NODES=500000000     node budget of the 6x6 probe (`--goal sign --guess 2`), per size
#   THREADS=2  TT_MB=4096  WARM=1 (read a run's levels once before it)
# Prints: per level from 25 the positions, bytes and bits per position, and the total; the
# time to open the whole database; the median and mean of a warm random probe; then one line
# per proof: database, seeds, value, nodes, seconds of search, nodes per second, wall seconds,
# peak memory. Times need a quiet machine; node counts do not.
set -euo pipefail
cd "$(dirname "$0")/.."
search=${1:?usage: scripts/bench-searchdb.sh SEARCH_DIR [STORED_DIR]}
stored=${2:-}
capture=${CAPTURE:-empty}
command -v jq >/dev/null || { echo "bench-searchdb.sh needs jq (apt-get install jq)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bench-searchdb.sh needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
cargo build --release --quiet -p kalah -p probe-bench
kalah=target/release/kalah
probe=target/release/probe-bench
rules=(--houses 6 --capture "$capture")

echo "== size of $search"
"$kalah" db info "${rules[@]}" --dir "$search" --json | jq -r '
  [.levels[] | select(.level >= 25)] as $l
  | ($l[] | "level \(.level): \(.positions) positions, \(.bytes) bytes, \((.bytes * 8 / .positions * 1000 | round) / 1000) bits each (\(.codec))"),
    "levels 25..\($l[-1].level): \(($l | map(.bytes) | add) * 8 / ($l | map(.positions) | add) * 1000 | round / 1000) bits per position",
    "all levels: \(.bytes) bytes"'

echo "== open and probe (top level, $((${PROBES:-1000000})) random boards, one untimed pass first)"
"$probe" "${rules[@]}" --dir "$search" --count 1 >/dev/null # page in headers
"$probe" "${rules[@]}" --dir "$search" --count "${PROBES:-1000000}" --warm | jq -r '
  "open \(.open_ms * 1000 | round / 1000) ms; warm probe median \(.median_us * 1000 | round) ns (per-probe clock), mean \(.mean_ns | round) ns (pass timed whole), p99 \(.p99_us * 1000 | round) ns"'
"$probe" "${rules[@]}" --dir "$search" --count "${PROBES:-1000000}" --warm --huge-pages | jq -r '
  "read again in \(.read_s * 10 | round / 10) s, \(.huge_page_bytes // 0) of \(.read_bytes) bytes mapped in huge pages: warm probe median \(.median_us * 1000 | round) ns, mean \(.mean_ns | round) ns, p99 \(.p99_us * 1000 | round) ns"'

timing=$(mktemp); err=$(mktemp); trap 'rm -f "$timing" "$err"' EXIT
warm() { # dir upto: the levels read once, so that a run starts with them in the page cache
    local l
    # The page cache emptied first where allowed (root): pages of another database read twice
    # stay ahead of pages read once, and two large databases do not fit together.
    if [[ -w /proc/sys/vm/drop_caches ]]; then sync; echo 1 >/proc/sys/vm/drop_caches; fi
    for ((l = 0; l <= $2; l++)); do cat "$(printf '%s/level-%03d.kdb' "$1" "$l")"; done >/dev/null
}
prove() { # label dir upto seeds extra...
    local label=$1 dir=$2 upto=$3 seeds=$4; shift 4
    [[ "${WARM:-1}" == 1 ]] && warm "$dir" "$upto"
    set +e
    json=$(/usr/bin/time -o "$timing" -f '%e %M' "$kalah" solve "${rules[@]}" --seeds "$seeds" \
        --db "$dir" --db-upto "$upto" --threads "${THREADS:-2}" --tt-mb "${TT_MB:-4096}" --json "$@" 2>"$err")
    status=$?
    set -e
    read -r wall peak < <(tail -n 1 "$timing")
    if [[ $status == 0 ]]; then
        jq -r --arg l "$label" --arg w "$wall" --arg m "$((peak / 1024))" \
            '"\($l): value \(.value // "-") nodes \(.nodes) search \(.seconds*100|round/100) s, \(.nodes_per_second/1e6*100|round/100) Mnodes/s, wall \($w) s, peak \($m) MiB"' <<<"$json"
    else
        nodes=$(grep -o 'after [0-9]* nodes' "$err" | grep -o '[0-9]*' || echo '?')
        done=$(grep -o 'about [0-9.]*% done' "$err" | tail -n 1 || true)
        echo "$label: stopped after $nodes nodes, wall $wall s, peak $((peak / 1024)) MiB; probe ${done:-?} ($(tail -n 1 "$err"))"
    fi
}
echo "== proofs"
# (The search form's runs first, then the other database's: each run reads its levels once
# before it starts, WARM=1, and two such databases may not fit in the page cache together.)
budget=(--goal sign --guess 2 --node-limit "${NODES:-500000000}")
for seeds in ${PROOFS:-5}; do
    for upto in ${UPTOS:-30 33}; do prove "6x$seeds search $upto" "$search" "$upto" "$seeds"; done
done
if [[ "${NODES:-500000000}" != 0 ]]; then
    for upto in ${UPTOS:-30 33}; do
        prove "6x6 search $upto, ${NODES:-500000000} nodes" "$search" "$upto" 6 "${budget[@]}"
    done
fi
if [[ -n "$stored" ]]; then
    for seeds in ${PROOFS:-5}; do prove "6x$seeds stored 30" "$stored" 30 "$seeds"; done
    if [[ "${NODES:-500000000}" != 0 ]]; then
        prove "6x6 stored 30, ${NODES:-500000000} nodes" "$stored" 30 6 "${budget[@]}"
    fi
fi
