#!/usr/bin/env bash
# Builds the concurrency tests (tests/concurrency: one compiled model run from many threads
# through a RunContextPool) and the libraries they link with ThreadSanitizer, in build-tsan/,
# and runs them; any report fails the run. Run scripts/setup.sh once first (it installs the
# compiler and dependencies). Extra arguments go to the test binary (--gtest_filter=...).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TSAN_BUILD_DIR:-$root/build-tsan}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# -O1 throughout, kernels included, and line tables (-g1) for the reports' stacks: all that
# ThreadSanitizer needs. RelWithDebInfo's -O2, the kernels' -O3 and full debug information
# would only make the build slower (-g1 alone: a quarter less time per file); asserts stay on.
flags="-fsanitize=thread -g1 -O1"
cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO= -DCMAKE_CXX_FLAGS_RELWITHDEBINFO= -DESTUARY_KERNEL_OPTIMIZATION=-O1 \
  -DESTUARY_BUILD_PYTHON=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target estuary_concurrency_tests
TSAN_OPTIONS="halt_on_error=1 abort_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}" \
  "$build_dir/bin/estuary_concurrency_tests" "$@"
echo "tsan.sh: the concurrency tests ran clean under ThreadSanitizer"
