#!/usr/bin/env bash
# Computes the results table's entries: every first turn's exact value (and from them the
# start's value and the pie rule's) for each rule set of the rule books, recorded in
# data/results.json by `kalah solve --first-turns --record`; `kalah results` prints the table.
#
#   scripts/results.sh [SEEDS...]          (default: 3 4 5)
#
# Environment: RULE_SETS (default "kalah empty brio russian no-capture"), BUILD_UPTO (database
# levels to build for each rule set; default: solve's own choice), DB_ROOT (directories of
# databases named like h6-empty-emptier-either, used instead of data/db when present),
# TIMEOUT (seconds per game, default 3600; a game past it is left out and said so),
# THREADS (search threads; default every core), RESULTS (the table file; default
# data/results.json), KALAH (the binary; default target/release/kalah, built first).
set -uo pipefail
cd "$(dirname "$0")/.."
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(3 4 5)
sets=${RULE_SETS:-"kalah empty brio russian no-capture"}
if [ -z "${KALAH:-}" ]; then
    cargo build --release --quiet || exit 1
    KALAH=target/release/kalah
fi
rules_of() {
    case "$1" in
        kalah) echo "--capture standard --leftover owner --end either" ;;
        empty) echo "--capture empty --leftover owner --end either" ;;
        brio) echo "--capture empty --leftover emptier --end either" ;;
        russian) echo "--capture standard --leftover emptier --end mover" ;;
        no-capture) echo "--capture never --leftover owner --end either" ;;
        *) echo "unknown rule set $1" >&2; return 1 ;;
    esac
}
slug_of() { # h6-<capture>-<leftover>-<end>
    set -- $(rules_of "$1")
    echo "h6-$2-$4-$6"
}
status=0
for n in "${seeds[@]}"; do
    for set in $sets; do
        flags=$(rules_of "$set") || exit 2
        db=()
        if [ -n "${DB_ROOT:-}" ] && [ -d "$DB_ROOT/$(slug_of "$set")" ]; then
            db=(--db "$DB_ROOT/$(slug_of "$set")")
        elif [ -n "${BUILD_UPTO:-}" ]; then
            db=(--build-upto "$BUILD_UPTO")
        fi
        echo "== $set, 6 houses, $n seeds ${db[*]}"
        start=$(date +%s)
        # shellcheck disable=SC2086
        threads=()
        [ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
        timeout -s INT "${TIMEOUT:-3600}" "$KALAH" solve --houses 6 --seeds "$n" $flags \
            "${db[@]}" "${threads[@]}" --first-turns --record "${RESULTS:-data/results.json}" \
            --log-every 60 | grep -E '^(value|nodes)'
        rc=${PIPESTATUS[0]}
        echo "   exit $rc after $(( $(date +%s) - start )) s"
        [ "$rc" -ne 0 ] && status=1
    done
done
exit $status
