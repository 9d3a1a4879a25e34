#!/usr/bin/env bash
# Builds inlay and runs every test. This is the README's test command; CI runs it too.
#   scripts/test.sh                      Release build in build/, all tests
#   scripts/test.sh --sanitize=address,undefined   the same under sanitizers, in build-asan/
#   scripts/test.sh --sanitize=thread --tests=REGEX
#                                        only the tests whose ctest names match REGEX (and
#                                        only their targets are built), e.g. the runtime's
#                                        concurrency tests under ThreadSanitizer
# At the end it prints how many tests skipped and why. With INLAY_TEST_NO_SKIP=1 (as CI
# sets it) a test that lacks an input (testdata, llama.cpp's tools) fails instead; only a
# missing device (no CUDA GPU) still skips.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
tests=""
for arg in "$@"; do
  case "$arg" in
    --sanitize=*) sanitize="${arg#--sanitize=}" ;;
    --tests=*) tests="${arg#--tests=}" ;;
    *) echo "usage: $0 [--sanitize=LIST] [--tests=REGEX]" >&2; exit 2 ;;
  esac
done
jobs=$(nproc)
dir=build
[ -z "$sanitize" ] || dir="build-${sanitize//,/-}"
# Ninja where it is installed (scripts/install-deps.sh installs it): it keeps both cores
# busy through the build; a build folder keeps the generator it was configured with.
generator=()
if command -v ninja >/dev/null && [ ! -f "$dir/CMakeCache.txt" ]; then
  generator=(-G Ninja)
fi
if [ -n "$sanitize" ]; then
  # The CUDA backend is built and its host-side tests run in the plain build; sanitizers
  # add nothing to CUDA code that cannot run here (no GPU), so they build the CPU library.
  # -O2 as RelWithDebInfo, with line tables only (-g1): the sanitizers' stack traces need
  # no more, and full debug info makes the build much slower.
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DINLAY_SANITIZE="$sanitize" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
    -DINLAY_BENCH=OFF -DINLAY_WERROR=ON -DINLAY_CUDA=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
else
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DINLAY_WERROR=ON
fi
# Every skip of the run appends a line to $dir/test-skips.log (tests/support/skip.h).
skips="$dir/test-skips.log"
rm -f "$skips"
report_skips() {
  local total=0 missing=0 device=0
  if [ -f "$skips" ]; then
    total=$(wc -l < "$skips")
    missing=$(grep -c $'\tmissing\t' "$skips" || true)
    device=$(grep -c $'\tno-device\t' "$skips" || true)
  fi
  echo "test.sh: $total skipped (a missing input: $missing, no device: $device)" \
    "${INLAY_TEST_NO_SKIP:+[INLAY_TEST_NO_SKIP=$INLAY_TEST_NO_SKIP: a missing input fails instead]}"
  [ "$total" -eq 0 ] || awk -F'\t' '{ printf "  %s (%s): %s\n", $1, $2, $3 }' "$skips"
}
if [ -n "$tests" ]; then
  # Each ctest NAME is built by the target test_NAME (see tests/CMakeLists.txt).
  mapfile -t names < <(ctest --test-dir "$dir" -N -R "$tests" | sed -n 's/^ *Test *#[0-9]*: //p')
  if [ "${#names[@]}" -eq 0 ]; then echo "no test matches '$tests'" >&2; exit 2; fi
  cmake --build "$dir" -j"$jobs" --target "${names[@]/#/test_}"
  trap report_skips EXIT
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" -R "$tests"
else
  cmake --build "$dir" -j"$jobs"
  trap report_skips EXIT
  ctest --test-dir "$dir" --output-on-failure -j"$jobs"
fi
