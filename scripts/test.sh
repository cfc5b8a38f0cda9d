#!/usr/bin/env bash
# Runs every test: sets up and builds first (see setup.sh), then the whole ctest suite, in
# parallel (each Python test file runs in its framework's environment, python/envs), then the
# concurrency tests under ThreadSanitizer (scripts/tsan.sh), the readers of untrusted files
# and their tests under AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh
# --ci, which installs clang 16 when missing), and every fuzzer briefly (scripts/fuzz.sh
# --ci). Extra arguments go to ctest, and then only ctest runs: `scripts/test.sh -L torch`,
# `scripts/test.sh -R Golden`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
started=$SECONDS
"$root/scripts/setup.sh"
setup_seconds=$((SECONDS - started))
started=$SECONDS
status=0
ctest --test-dir "$build_dir" -j "$(nproc)" --output-on-failure "$@" || status=$?
tests_seconds=$((SECONDS - started))
# The sanitizer stages, each with a build of its own, unless ctest was given a selection.
sanitizer_note=""
if [[ $# -eq 0 ]]; then
  started=$SECONDS
  "$root/scripts/tsan.sh" || status=$?
  sanitizer_note=", ThreadSanitizer's build and run $((SECONDS - started)) s"
  started=$SECONDS
  "$root/scripts/sanitize.sh" --ci || status=$?
  sanitizer_note+=", ASan+UBSan's $((SECONDS - started)) s"
  started=$SECONDS
  "$root/scripts/fuzz.sh" --ci --jobs "$(nproc)" || status=$?
  sanitizer_note+=", the fuzzers' $((SECONDS - started)) s"
fi
echo "test.sh: setup and build took ${setup_seconds} s, the tests ${tests_seconds} s${sanitizer_note}"
exit $status
