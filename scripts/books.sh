#!/usr/bin/env bash
# Builds the opening books committed under data/books: for every rule set of the rule books and
# 3 to 6 seeds, what data/results.json and the ledgers under data/proofs say, and for the boards
# named in PLIES the exact value of every position within that many moves of the start.
#
#   scripts/books.sh                      # every book, with the plies below
#   BOARDS="6x4" RULE_SETS="kalah empty" scripts/books.sh
#
# Environment: PLIES (board:plies pairs; boards not named get 0, the recorded facts only),
# BOARDS (default: 6x3 6x4 6x5 6x6), RULE_SETS (default: all five), THREADS (default 1),
# KALAH (default target/release/kalah), BOOKS (default data/books). A stopped build goes on
# from its .partial file when run again.
#
# The committed books are what the defaults make: 6 plies for 6x3 and 2 for 6x4, but for the
# no-capture game (PLIES_NO_CAPTURE) 2 plies of 6x3 only: its positions take seconds each.
set -euo pipefail
cd "$(dirname "$0")/.."

PLIES=${PLIES:-"6x3:6 6x4:2"}
PLIES_NO_CAPTURE=${PLIES_NO_CAPTURE:-"6x3:2"}
BOARDS=${BOARDS:-"6x3 6x4 6x5 6x6"}
RULE_SETS=${RULE_SETS:-"kalah empty brio russian no-capture"}
THREADS=${THREADS:-1}
BOOKS=${BOOKS:-data/books}
KALAH=${KALAH:-target/release/kalah}
if [ ! -x "$KALAH" ]; then
    cargo build --release -q -p kalah
fi

flags_of() {
    case "$1" in
        kalah) echo "--capture standard --leftover owner --end either" ;;
        empty) echo "--capture empty --leftover owner --end either" ;;
        brio) echo "--capture empty --leftover emptier --end either" ;;
        russian) echo "--capture standard --leftover emptier --end mover" ;;
        no-capture) echo "--capture never --leftover owner --end either" ;;
        *) echo "unknown rule set $1" >&2; exit 2 ;;
    esac
}

plies_of() {
    local p list=$PLIES
    if [ "$2" = no-capture ]; then
        list=$PLIES_NO_CAPTURE
    fi
    for p in $list; do
        if [ "${p%%:*}" = "$1" ]; then
            echo "${p#*:}"
            return
        fi
    done
    echo 0
}

for set in $RULE_SETS; do
    for board in $BOARDS; do
        seeds=${board#6x}
        plies=$(plies_of "$board" "$set")
        name="$set $board (plies $plies)"
        # shellcheck disable=SC2046
        out=$(mktemp)
        status=0
        "$KALAH" book build --houses 6 --seeds "$seeds" $(flags_of "$set") --plies "$plies" \
            --threads "$THREADS" --out "$BOOKS/$(printf '6x%s-%s.kbook' "$seeds" \
            "$(flags_of "$set" | awk '{print $2"-"$4"-"$6}')")" >"$out" 2>&1 || status=$?
        case $status in
            0) echo "$name: $(grep -m1 "\.kbook:" "$out")" ;;
            2) echo "$name: skipped ($(tail -1 "$out"))" ;;
            *) cat "$out" >&2; rm -f "$out"; exit "$status" ;;
        esac
        rm -f "$out"
    done
done
