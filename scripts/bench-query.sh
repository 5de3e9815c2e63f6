#!/usr/bin/env bash
# `kalah query` as a player uses it on 6-seed Kalah: the time to open the default database
# (a position it holds), and the time of each of COUNT mid-game positions (30 to 42 seeds in the
# houses, reached by random play from the start with a fixed seed), with the median.
#
#   scripts/bench-query.sh [COUNT] [SEED]
#
# Environment: KALAH (default target/release/kalah), CAPTURE (standard or empty; default
# standard, or empty with IRVING), DB (the database directory; default: the default database of
# those rules, built in the search form up to 22 seeds if missing), BUDGET (seconds per
# position, default 60).
#
# IRVING: the path of Irving's serial solver (`kalah-s` of the public repository girving/kalah,
# `make serial`, built outside this repository), IRVING_DB its endgame database (default
# endgame.dat beside it; `generator`, `c 22` for 22 seeds), IRVING_SEEDS its size (default 22),
# IRVING_TT its table's size in bits (default 24). Irving's program plays empty capture, so
# CAPTURE defaults to empty; each position is then answered by both programs one after the
# other, their final margins compared (a disagreement stops the run), and both medians and
# their ratio printed.
#
# Positions, sources and seconds are printed, one a line, then the summary. Run it on a quiet
# machine: each figure is one process, wall time.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${1:-24}
SEED=${2:-1}
KALAH=${KALAH:-target/release/kalah}
BUDGET=${BUDGET:-60}
IRVING=${IRVING:-}
if [ -n "$IRVING" ]; then
    CAPTURE=${CAPTURE:-empty}
    IRVING_DB=${IRVING_DB:-$(dirname "$IRVING")/endgame.dat}
    [ -x "$IRVING" ] || { echo "IRVING=$IRVING is not an executable" >&2; exit 2; }
    [ -f "$IRVING_DB" ] || { echo "no Irving database at $IRVING_DB (set IRVING_DB)" >&2; exit 2; }
    [ "$CAPTURE" = empty ] || { echo "Irving's program plays empty capture: CAPTURE=$CAPTURE" >&2; exit 2; }
fi
CAPTURE=${CAPTURE:-standard}
RULES=(--houses 6 --seeds 6 --capture "$CAPTURE")
if [ ! -x "$KALAH" ]; then
    cargo build --release -q -p kalah
fi
if [ -z "${DB:-}" ]; then
    DB=data/db/h6-$CAPTURE-owner-either
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

# Irving's position: the mover's six houses and store, then the opponent's (both in sowing
# order), from the full form "S: a b c d e f [s] / g h i j k l [n]".
irving_args() {
    local side=${1%%:*} rest=${1#*: }
    rest=${rest//[\[\]]/}
    local south=${rest%%/*} north=${rest#*/}
    if [ "$side" = S ]; then echo $south $north; else echo $north $south; fi
}

median() {
    sort -g | awk '{ t[NR] = $1 } END {
        m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
        printf "%.3f %.3f %.3f\n", m, t[1], t[NR] }'
}

times=()
itimes=()
for pos in "${positions[@]}"; do
    t0=$(now)
    out=$("$KALAH" query "${RULES[@]}" --db "$DB" --no-book --budget "$BUDGET" --json "$pos")
    t1=$(now)
    s=$(echo "$t1 - $t0" | bc -l)
    times+=("$s")
    if [ -z "$IRVING" ]; then
        printf '%-50s %-8s %8.3f s\n' "$pos" "$(jq -r .source <<<"$out")" "$s"
        continue
    fi
    t0=$(now)
    # shellcheck disable=SC2046
    iout=$("$IRVING" -t "${IRVING_TT:-24}" -e "${IRVING_SEEDS:-22}" -E "$IRVING_DB" p $(irving_args "$pos"))
    t1=$(now)
    is=$(echo "$t1 - $t0" | bc -l)
    itimes+=("$is")
    ours=$(jq -r .margin <<<"$out")
    theirs=$(sed -n 's/^Move: .*, r \(-\{0,1\}[0-9]*\), rd.*/\1/p' <<<"$iout" | tail -1)
    printf '%-50s %-8s margin %4s %8.3f s   Irving margin %4s %8.3f s\n' \
        "$pos" "$(jq -r .source <<<"$out")" "$ours" "$s" "$theirs" "$is"
    if [ "$ours" != "$theirs" ]; then
        echo "the two programs disagree on $pos: $ours against $theirs" >&2
        exit 1
    fi
done
read -r m lo hi < <(printf '%s\n' "${times[@]}" | median)
printf '%d mid-game positions: median %.3f s, min %.3f s, max %.3f s\n' "${#times[@]}" "$m" "$lo" "$hi"
if [ -n "$IRVING" ]; then
    read -r im ilo ihi < <(printf '%s\n' "${itimes[@]}" | median)
    printf 'Irving (%s, %s seeds): median %.3f s, min %.3f s, max %.3f s; ours / Irving (medians) %.2f\n' \
        "$IRVING" "${IRVING_SEEDS:-22}" "$im" "$ilo" "$ihi" "$(echo "$m / $im" | bc -l)"
fi
