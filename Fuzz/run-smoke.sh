#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each one for a bounded time. Exits non-zero if any input crashes a target
# (or a known reproducer under crashes-found/ still does). Called from CI; see README.md.
#
#   FUZZ_SECONDS=30      seconds per fuzzer (libFuzzer -max_total_time)
#   FUZZERS="..."        which fuzzers to run (default: all)
#   FUZZ_ARGS="..."      extra libFuzzer flags, e.g. "-seed=1" or "-jobs=2"
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-30}"
fuzzers="${FUZZERS:-LinkFrameFuzzer LinkSessionFuzzer DBusWireFuzzer TranscriptFuzzer ConfigurationFuzzer HealthCharacteristicFuzzer RecordAccessFuzzer CBORFuzzer SMPFuzzer MCUbootImageFuzzer SMPDeviceFuzzer HealthProjectionRequestFuzzer UserControlPointFuzzer ChangePageFuzzer}"

# --sanitize=fuzzer links libFuzzer's main; without it an executable fuzzes nothing. But SwiftPM passes the two
# sanitizers to the compiler as separate -sanitize= flags and the Swift driver keeps only the last one, so every
# module would get either coverage or ASan, never both. The -Xswiftc flag (which comes last) restores both.
build_flags=(-c release --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address)
swift build "${build_flags[@]}"
bin="$(swift build "${build_flags[@]}" --show-bin-path)"

export SWIFT_BACKTRACE=enable=no  # libFuzzer and ASan print the stack; the Swift backtracer would hang on a crash
mkdir -p corpus/crash-artifacts
status=0
for fuzzer in $fuzzers; do
    flags=()
    leaks=1
    case "$fuzzer" in
        LinkFrameFuzzer) kind=frame ;;
        LinkSessionFuzzer) kind=session ;;
        DBusWireFuzzer) kind=dbus ;;
        TranscriptFuzzer) kind=transcript ;;
        RecordAccessFuzzer) kind=racp ;;
        HealthCharacteristicFuzzer) kind=health ;;
        # TOMLKit (0.6) leaks what its C++ shim mallocs for TOMLTable.keys and each string value, a few hundred
        # bytes a parse: tetherd parses once, so it is not worth a fork; leak checks would stop every run on it.
        ConfigurationFuzzer) kind=config; flags=(-detect_leaks=0); leaks=0 ;;
        CBORFuzzer) kind=cbor ;;
        SMPFuzzer) kind=smp ;;
        MCUbootImageFuzzer) kind=mcuboot ;;
        SMPDeviceFuzzer) kind=smpdevice ;;
        HealthProjectionRequestFuzzer) kind=projection ;;
        ChangePageFuzzer) kind=changes ;;
        UserControlPointFuzzer) kind=uds ;;
        *) echo "unknown fuzzer $fuzzer" >&2; exit 2 ;;
    esac

    # Reproducers found earlier must not crash any more.
    shopt -s nullglob
    for reproducer in crashes-found/"$kind"-*; do
        if ! ASAN_OPTIONS="detect_leaks=$leaks" "$bin/$fuzzer" ${flags[@]+"${flags[@]}"} "$reproducer" > "corpus/$fuzzer-reproducer.log" 2>&1; then
            echo "FAIL $fuzzer: $reproducer still crashes:"
            grep -E "Fatal error|runtime failure|Assertion|ERROR:|#[0-9]+ .* in \\\$s" "corpus/$fuzzer-reproducer.log" | head -12
            status=1
        fi
    done
    shopt -u nullglob

    mkdir -p "corpus/$fuzzer"
    log="corpus/$fuzzer.log"
    # The first directory collects new inputs (kept between runs, ignored by git); the seeds are read only.
    # shellcheck disable=SC2086
    if ASAN_OPTIONS="detect_leaks=$leaks" "$bin/$fuzzer" ${flags[@]+"${flags[@]}"} "corpus/$fuzzer" "seeds/$kind" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
        -artifact_prefix="corpus/crash-artifacts/$fuzzer-" ${FUZZ_ARGS:-} > "$log" 2>&1; then
        result=ok
    else
        result=CRASH
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    coverage=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
    printf '%-18s %-5s %10s execs in %ss (%s/s)  %s\n' "$fuzzer" "$result" "${runs:-?}" "$seconds" "${rate:-?}" "$coverage"
    if [ "$result" = CRASH ]; then
        grep -E "Fatal error|runtime failure|ERROR:|#[0-9]+ .* in \\\$s|Test unit written|Base64" "$log" | head -20
    fi
done
exit $status
