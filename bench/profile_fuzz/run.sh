#!/usr/bin/env bash
# Fuzz benchmark for the profile reader (issue #4): at least 1e6 executions without a crash.
# Usage: bench/profile_fuzz/run.sh [BUILD_FUZZ_DIR] [RUNS]   (default build-fuzz, 1000000)
# Prints execs/s; exits non-zero on a crash. Takes minutes (seen: 2293 execs/s, ~7 min).
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$here/build-fuzz}"
runs="${2:-1000000}"
fuzzer="$build/fuzz/profile_reader"
[ -x "$fuzzer" ] || { echo "no $fuzzer: run ./scripts/setup (it builds build-fuzz/ with clang)" >&2; exit 2; }
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
start=$(date +%s)
ASAN_OPTIONS=detect_leaks=1 "$fuzzer" -runs="$runs" -rss_limit_mb=2048 -timeout=10 \
  "$corpus" "$here/fuzz/corpus/profile_reader" 2>&1 | tail -3
secs=$(( $(date +%s) - start ))
echo "profile_reader: $runs execs in ${secs}s = $(( runs / (secs > 0 ? secs : 1) )) execs/s, no crash"
