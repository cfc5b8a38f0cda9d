#!/usr/bin/env bash
# Builds Estuary with AddressSanitizer and UndefinedBehaviorSanitizer (clang, in build-asan/)
# and runs the C++ test suite under them (ctest label "cpp"); any report fails the run: ASan
# halts on the first error, UBSan's checks do not recover, and LeakSanitizer reports leaks
# at exit. The same build has the libFuzzer harnesses (fuzz/, ESTUARY_BUILD_FUZZERS: the code
# carries -fsanitize=fuzzer-no-link's coverage counters), whose seed corpora and regression
# inputs the "cpp" tests replay; scripts/fuzz.sh runs the fuzzers themselves.
#
# Left out: the Python tests (a sanitized libestuary_core cannot be loaded into the
# frameworks' uninstrumented Pythons without preloading the ASan runtime into the
# interpreter, which then reports the interpreter's and the frameworks' own leaks and
# mismatches), the allocation-counting test (tests/ge_alloc: it replaces malloc, and ASan's
# runtime aborts before main, so it is not even built here) and the benchmarks. Needs clang
# 16 (Debian 12's clang-16): the code captures structured bindings in lambdas, which GCC
# accepts in C++17 and clang only from 16 on. Installs clang 16, its sanitizer runtimes and
# libomp when they are missing; run scripts/setup.sh once first for the rest.
#
#   scripts/sanitize.sh                  build, then every C++ test
#   scripts/sanitize.sh --ci             the CI subset: the readers of untrusted files only
#   scripts/sanitize.sh -R Onnx          extra arguments go to ctest
#   scripts/sanitize.sh --build-only     configure and build, no tests (scripts/fuzz.sh uses
#                                        it; SANITIZE_TARGETS="a b" builds just those targets)
#   ASAN_BUILD_DIR=out BUILD_JOBS=2 scripts/sanitize.sh
#
# The CI subset (--ci, or SANITIZE_SUBSET=ci) builds and runs what reads untrusted files: the
# core, the frontend plugins, the ONNX and TensorFlow reader tests, the golden pass tests, the
# .npy/.npz tests, and every harness but the .eom one with its seed corpus and regression
# inputs. It leaves out the GE backend and everything linking it (its kernels are compiled
# with -O3 and make up most of the sanitized build's time, and the unit tests, CLI tests and
# the golden O2 case need the fusion plugin, which links it): on this 2-core machine the full
# build does not fit a 12-minute CI stage, the subset does (fuzz/README.md has the figures).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${ASAN_BUILD_DIR:-$root/build-asan}
subset=${SANITIZE_SUBSET:-all}
build_only=false
while (($#)); do
  case $1 in
    --ci) subset=ci ;;
    --build-only) build_only=true ;;
    *) break ;;
  esac
  shift
done

packages=(clang-16 libclang-rt-16-dev libomp-16-dev)
source "$root/scripts/debian_packages.sh"
install_missing_packages sanitize "${packages[@]}"

started=$SECONDS
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -gline-tables-only -O1 -fsanitize=fuzzer-no-link"
link_flags="-fsanitize=address,undefined"
# The build type's own flags are replaced (RelWithDebInfo would add -O2 and -DNDEBUG after
# ours): -O1 keeps the reports' stacks whole, and asserts stay on. Line tables are all the
# stacks need (file and line of each frame); serialize.cpp compiles a tenth faster with them
# than with full -g.
CC=${CC:-clang-16} CXX=${CXX:-clang++-16} cmake -S "$root" -B "$build_dir" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO= -DCMAKE_CXX_FLAGS_RELWITHDEBINFO= \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
  -DCMAKE_MODULE_LINKER_FLAGS="$link_flags" \
  -DESTUARY_BUILD_PYTHON=OFF -DESTUARY_BUILD_BENCH=OFF -DESTUARY_BUILD_FUZZERS=ON >/dev/null

# What to build: the test binaries (which bring the plugins and the command line they need)
# and the harnesses; not the allocation-counting test.
harnesses=()
for source in "$root"/fuzz/*_fuzzer.cpp; do
  name=$(basename "$source" _fuzzer.cpp)
  [[ $subset == ci && $name == eom ]] && continue
  harnesses+=("estuary_fuzz_$name")
done
if [[ $subset == ci ]]; then
  default_targets="estuary_onnx_tests estuary_tensorflow_tests estuary_golden_tests estuary_npy_tests ${harnesses[*]}"
else
  default_targets="estuary_unit_tests estuary_cli_tests estuary_npy_tests estuary_concurrency_tests estuary_ge_tests
                   estuary_golden_tests estuary_onnx_tests estuary_tensorflow_tests ${harnesses[*]}"
fi
targets=()
for target in ${SANITIZE_TARGETS:-$default_targets}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "${BUILD_JOBS:-$(nproc)}" "${targets[@]}"
build_seconds=$((SECONDS - started))
if $build_only; then
  echo "sanitize.sh: build ${build_seconds} s"
  exit 0
fi

# Tests of binaries not built here have no "cpp" label (ctest's placeholders for them) and
# are left out by -L cpp; the CI subset names its tests, so a fuller build-asan/ runs the same.
# The install test (tests/install) builds an out-of-tree consumer with the system compiler
# and no sanitizer, which cannot link the sanitized libraries.
exclude="^NoAllocation\.|^InstalledSdk\."
select=()
if [[ $subset == ci ]]; then
  exclude="$exclude|^Golden/GoldenTest\.Run/pipelines_o2_fusion|^fuzz_(corpus|regression)\.eom"
  select=(-R "^(OnnxReaderTest|OnnxGoldenTest|Crc32c|TensorProtoTest|Npy|Golden/|fuzz_)")
fi
started=$SECONDS
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
symbolize=${symbolizer:+ external_symbolizer_path=$symbolizer}
export ASAN_OPTIONS="halt_on_error=1 abort_on_error=0 detect_leaks=1 strict_string_checks=1 check_initialization_order=1$symbolize ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1$symbolize ${UBSAN_OPTIONS:-}"
(cd "$build_dir" && ctest -L cpp "${select[@]}" -E "$exclude" -j "$(nproc)" --output-on-failure --timeout 900 "$@")
echo "sanitize.sh: build ${build_seconds} s, tests $((SECONDS - started)) s; the C++ tests ran clean under ASan and UBSan"
