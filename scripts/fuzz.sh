#!/usr/bin/env bash
# Runs the libFuzzer harnesses (fuzz/: one per reader of untrusted files) in the ASan+UBSan
# build of scripts/sanitize.sh (build-asan/), each for a given time, from its seed corpus
# (fuzz/corpus/<harness>, read only) and a working corpus outside the repository
# (build-asan/fuzz-corpus/<harness>, kept between runs). A crash, an uncaught exception, a
# sanitizer report, a leak, an input slower than --timeout seconds or a run above --rss-mb
# MB is a finding: its input goes to build-asan/fuzz-artifacts/<harness>/ and the harness
# starts again until its time is up (at most 100 findings each). Prints per harness the
# executions, exec/s, coverage (cov: edges, ft: features), corpus size and findings; exits
# non-zero when any harness found something. Logs: build-asan/fuzz-logs/<harness>.log.
#
#   scripts/fuzz.sh                        every harness, 60 s each
#   scripts/fuzz.sh --seconds 300 onnx     the ones named, 300 s each
#   scripts/fuzz.sh --ci                   every harness but eom 20 s (unless --seconds), stopping
#                                          at a harness's first finding (eom needs the GE backend,
#                                          which sanitize.sh's CI subset does not build)
#   scripts/fuzz.sh --jobs 2 ...           two harnesses at once
#   scripts/fuzz.sh --list                 the harnesses
#   scripts/fuzz.sh --no-build ...         run what build-asan/ has
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${ASAN_BUILD_DIR:-$root/build-asan}

seconds=""
ci=false
jobs=1
build=true
timeout=10
rss_mb=2048
harnesses=()
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --ci) ci=true ;;
    --jobs) jobs=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --rss-mb) rss_mb=$2; shift ;;
    --no-build) build=false ;;
    --list) ls "$root"/fuzz/*_fuzzer.cpp | sed 's|.*/||; s|_fuzzer.cpp||'; exit 0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1") ;;
  esac
  shift
done
[[ -n $seconds ]] || { $ci && seconds=20 || seconds=60; }
if ((${#harnesses[@]} == 0)); then
  mapfile -t harnesses < <(ls "$root"/fuzz/*_fuzzer.cpp | sed 's|.*/||; s|_fuzzer.cpp||')
  if $ci; then
    for k in "${!harnesses[@]}"; do [[ ${harnesses[$k]} == eom ]] && unset "harnesses[$k]"; done
    harnesses=("${harnesses[@]}")
  fi
fi
for name in "${harnesses[@]}"; do
  [[ -f $root/fuzz/${name}_fuzzer.cpp ]] || { echo "fuzz.sh: no harness '$name' (--list)" >&2; exit 2; }
done

# Longest input per format: a little above the largest seeds, so that mutations can grow
# them, but not so long that each execution slows down.
max_len() {
  case $1 in
    npy|yaml_pipeline) echo 4096 ;;
    npz|est_text|estir_binary) echo 16384 ;;
    onnx|tf_graphdef|mindir|paddle_params) echo 32768 ;;
    eom|paddle_pir|paddle_legacy) echo 65536 ;;
    tf_savedmodel) echo 131072 ;;
    *) echo 16384 ;;
  esac
}

if $build; then
  targets=""
  for name in "${harnesses[@]}"; do targets+=" estuary_fuzz_$name"; done
  SANITIZE_TARGETS="$targets" "$root/scripts/sanitize.sh" --build-only
fi

# Leaks are findings; the fuzzer itself reports them (-detect_leaks=1).
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
symbolize=${symbolizer:+ external_symbolizer_path=$symbolizer}
export ASAN_OPTIONS="halt_on_error=1 abort_on_error=0 detect_leaks=1$symbolize ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1$symbolize ${UBSAN_OPTIONS:-}"

# Runs one harness for $seconds, restarting it after each finding; writes its summary line
# to build-asan/fuzz-logs/<name>.summary.
fuzz_one() {
  local name=$1
  local binary=$build_dir/bin/estuary_fuzz_$name
  local corpus=$build_dir/fuzz-corpus/$name artifacts=$build_dir/fuzz-artifacts/$name
  local log=$build_dir/fuzz-logs/$name.log seeds=$root/fuzz/corpus/$name
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  : > "$log"
  local started=$SECONDS findings=0 execs=0 last="" status
  local -a seed_dirs=()
  [[ -d $seeds ]] && seed_dirs=("$seeds")
  while true; do
    local left=$((seconds - (SECONDS - started)))
    ((left > 0)) || break
    local run_log=$log.current  # the run in progress, appended to the log when it ends
    status=0
    "$binary" "$corpus" "${seed_dirs[@]}" -max_total_time="$left" -max_len="$(max_len "$name")" \
      -timeout="$timeout" -rss_limit_mb="$rss_mb" -malloc_limit_mb="$rss_mb" -detect_leaks=1 \
      -artifact_prefix="$artifacts/" -print_final_stats=1 -reload=0 >"$run_log" 2>&1 || status=$?
    cat "$run_log" >> "$log"
    local line
    line=$(grep -E '^#[0-9]+' "$run_log" | tail -1 || true)
    [[ -n $line ]] && last=$line
    execs=$((execs + $(sed -E 's/^#([0-9]+).*/\1/' <<<"${line:-#0}")))
    rm -f "$run_log"
    if ((status != 0)); then
      findings=$((findings + 1))
      $ci && break
      ((findings < 100)) || break
    else
      break
    fi
  done
  local elapsed=$((SECONDS - started))
  ((elapsed > 0)) || elapsed=1
  local cov ft
  # A grep that matches nothing must not end the function: it runs under set -e when in the
  # background (--jobs), where nothing tests its status.
  cov=$({ grep -oE 'cov: [0-9]+' <<<"$last" || true; } | tail -1 | cut -d' ' -f2)
  ft=$({ grep -oE 'ft: [0-9]+' <<<"$last" || true; } | tail -1 | cut -d' ' -f2)
  local corpus_files
  corpus_files=$(find "$corpus" -type f | wc -l)
  local crash_files
  crash_files=$(find "$artifacts" -type f | wc -l)
  # Findings told apart by the sanitizer's summary line (or libFuzzer's for timeouts, OOMs
  # and uncaught exceptions).
  local distinct
  distinct=$({ grep -hE '^SUMMARY: ' "$log" || true; } | sed -E 's/ in .*//' | sort -u | wc -l)
  printf '%-15s %6ss %10s %8s %7s %7s %7s %5s/%-3s %s\n' "$name" "$elapsed" "$execs" "$((execs / elapsed))" \
    "${cov:-?}" "${ft:-?}" "$corpus_files" "$findings" "$distinct" "$artifacts ($crash_files files)" \
    > "$build_dir/fuzz-logs/$name.summary"
  grep -hE '^SUMMARY: ' "$log" | sed -E 's/ in .*//' | sort | uniq -c | sed 's/^/    /' \
    >> "$build_dir/fuzz-logs/$name.summary" || true
  return $((findings > 0))
}

header=$(printf '%-15s %7s %10s %8s %7s %7s %7s %9s %s' harness time execs exec/s cov ft corpus 'finds/kinds' artifacts)
failed=0
pids=()
for name in "${harnesses[@]}"; do
  rm -f "$build_dir/fuzz-logs/$name.summary"
  if ((jobs > 1)); then
    while (($(jobs -rp | wc -l) >= jobs)); do wait -n || failed=1; done
    fuzz_one "$name" &
  else
    fuzz_one "$name" || failed=1
    cat "$build_dir/fuzz-logs/$name.summary"
  fi
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || failed=1; done
echo
echo "$header"
for name in "${harnesses[@]}"; do cat "$build_dir/fuzz-logs/$name.summary"; done
if ((failed)); then
  echo "fuzz.sh: findings; their inputs are in $build_dir/fuzz-artifacts/ (replay: build-asan/bin/estuary_fuzz_<harness> FILE)"
  exit 1
fi
echo "fuzz.sh: no findings"
