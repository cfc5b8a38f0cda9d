#!/usr/bin/env bash
# Runs every test: sets up and builds first (see setup.sh), then the whole ctest suite, in
# parallel (each Python test file runs in its framework's environment, python/envs), then the
# concurrency tests under ThreadSanitizer (scripts/tsan.sh). Extra arguments go to ctest, and
# then only ctest runs: `scripts/test.sh -L torch`, `scripts/test.sh -R Golden`.
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
# The concurrency tests again under ThreadSanitizer (their own build, build-tsan/), unless
# ctest was given a selection.
tsan_note=""
if [[ $# -eq 0 ]]; then
  started=$SECONDS
  "$root/scripts/tsan.sh" || status=$?
  tsan_note=", ThreadSanitizer's build and run $((SECONDS - started)) s"
fi
echo "test.sh: setup and build took ${setup_seconds} s, the tests ${tests_seconds} s${tsan_note}"
exit $status
