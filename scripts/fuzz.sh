#!/usr/bin/env bash
# Fuzzes inlay's parsers with libFuzzer under ASan+UBSan (the targets are fuzz/*.cpp, see
# fuzz/README.md): configures a clang build in build-fuzz/ (INLAY_FUZZ=ON), builds the
# targets, writes each one's seed corpus, runs each for a bounded time and fails on any
# crash, leak, timeout, out-of-memory or sanitizer report. Prints executions per target.
#   scripts/fuzz.sh                            every target, 60 s each
#   scripts/fuzz.sh --time=600 tokenizer gguf  those targets, 10 minutes each
#   --jobs=N                                   targets run at once (default: cores)
# The corpus grows in build-fuzz/fuzz-corpus/NAME/ across runs. A failing input is left in
# build-fuzz/fuzz-artifacts/NAME/ (crash-*, leak-*, timeout-*, oom-*): fix the bug, then
# add the input to fuzz/regressions/NAME/, which every build's ctest runs (fuzz_NAME).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60
jobs=$(nproc)
targets=()
for arg in "$@"; do
  case "$arg" in
    --time=*) seconds="${arg#--time=}" ;;
    --jobs=*) jobs="${arg#--jobs=}" ;;
    -*) echo "usage: $0 [--time=SECONDS] [--jobs=N] [TARGET...]" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(gguf safetensors_folder tokenizer chat_template session_file)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (scripts/install-deps.sh)" >&2; exit 1; }

dir=build-fuzz
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
generator=()
command -v ninja >/dev/null && [ ! -f "$dir/CMakeCache.txt" ] && generator=(-G Ninja)
# -O1 with line tables and assertions on: quicker to build than -O2, and asserts are oracles.
CC=clang CXX=clang++ cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" -DINLAY_FUZZ=ON -DINLAY_CUDA=OFF -DINLAY_BENCH=OFF \
  -DINLAY_EXAMPLES=OFF "${launcher[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" "${targets[@]/#/fuzz_regress_}"

# The tokenizer target's vocabularies (written by fuzz/CMakeLists.txt).
INLAY_FUZZ_TOKENIZERS="$(cat "$dir/fuzz/tokenizer_vocabularies.txt")"
export INLAY_FUZZ_TOKENIZERS
export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

run_target() {
  local t=$1 corpus="$dir/fuzz-corpus/$1" seeds="$dir/fuzz-seeds/$1" artifacts="$dir/fuzz-artifacts/$1"
  mkdir -p "$corpus" "$artifacts"
  rm -rf "$seeds"
  "$dir/fuzz/fuzz_regress_$t" --write-seeds "$seeds" >/dev/null
  # -timeout: seconds per input; -rss_limit_mb also bounds a single allocation.
  "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "$seeds" fuzz/regressions/"$t" \
    >"$dir/fuzz-$t.log" 2>&1
}

status=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_target "$t" &
  pids+=($!)
  names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || { echo "fuzz.sh: ${names[0]} FAILED (see $dir/fuzz-${names[0]}.log)"; status=1; }
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "fuzz.sh: ${names[$i]} FAILED (see $dir/fuzz-${names[$i]}.log)"; status=1; }
done

printf '%-20s %12s %8s %s\n' target executions corpus result
for t in "${targets[@]}"; do
  log="$dir/fuzz-$t.log"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  units=$(find "$dir/fuzz-corpus/$t" -type f | wc -l)
  result=ok
  if grep -qE '^(==[0-9]+==ERROR|SUMMARY: |FINDING: )|ERROR: libFuzzer' "$log"; then
    result=FAILED
    status=1
    grep -E 'ERROR|SUMMARY|FINDING|artifact' "$log" | head -5 | sed 's/^/    /'
  fi
  printf '%-20s %12s %8s %s\n' "$t" "${execs:-?}" "$units" "$result"
done
exit $status
