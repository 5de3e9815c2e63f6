#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input with cargo-fuzz (libFuzzer), one target after the
# other, single-job: position notation, level files of the endgame database, HTTP API queries.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
#
# Needs the nightly toolchain (rustup toolchain install nightly); installs cargo-fuzz if it is
# missing. Findings land in fuzz/artifacts/TARGET/, the corpus in fuzz/corpus/TARGET/ (both
# ignored by git). Reproduce a finding with `cargo +nightly fuzz run TARGET FILE` in fuzz/.
# Not part of CI.
set -euo pipefail

secs="${1:-60}"
case "$secs" in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS_PER_TARGET]" >&2
    exit 2
    ;;
esac
cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz..." >&2
    cargo install cargo-fuzz --locked
fi

targets=(position level_file http_query)
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed=0
summary=()
for t in "${targets[@]}"; do
    echo "== fuzzing $t for ${secs}s" >&2
    mkdir -p "corpus/$t" "artifacts/$t"
    if ! nice -n 5 cargo +nightly fuzz build "$t" >"$logs/$t.build" 2>&1; then
        tail -40 "$logs/$t.build" >&2
        failed=1
        summary+=("$t: did not build (see above)")
        echo "${summary[-1]}" >&2
        continue
    fi
    rc=0
    nice -n 5 cargo +nightly fuzz run "$t" -- \
        -max_total_time="$secs" -jobs=1 -workers=1 -print_final_stats=1 \
        >"$logs/$t.log" 2>&1 || rc=$?
    # libFuzzer's job mode writes fuzz-0.log here and copies it into our log when it ends.
    rm -f fuzz-*.log
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | tail -1)"
    if [ -z "$execs" ]; then
        # No final stats (a crash): the last "Done N runs in T second(s)" or status line.
        execs="$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p; s/^#\([0-9]*\)\t.*/\1/p' "$logs/$t.log" | tail -1)"
        rate="$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' "$logs/$t.log" | tail -1)"
    fi
    found="$(grep -E '^(==[0-9]+== ERROR|SUMMARY|.*panicked at)|Test unit written to' "$logs/$t.log" || true)"
    if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
        failed=1
        result="FOUND something (exit $rc):"$'\n'"$(printf '%s\n' "$found" | sed 's/^/    /')"
        tail -40 "$logs/$t.log" >&2
    else
        result="nothing found"
    fi
    summary+=("$t: ${secs}s, ${execs:-?} executions, ${rate:-?} execs/s; $result")
    echo "${summary[-1]}" >&2
done
echo
echo "fuzzing summary:"
printf '  %s\n' "${summary[@]}"
exit "$failed"
