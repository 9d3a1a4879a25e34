#!/usr/bin/env bash
# csharp_example (ctest): runs the commands of examples/csharp/README.md against this
# build and the default model, with WORK_DIR as the README's bin/: struct_layout (inlay.h's
# offsets, for the layout check), mcs for Inlay.dll, inlay-demo.exe and InlayTests.exe,
# then mono on the tests and on the demo, once on the default device and once asking for
# CUDA (which must either run there or say clearly that it cannot and go on on the CPU).
#
#   test_example.sh SOURCE_DIR LIB_DIR WORK_DIR CC
#
# Without mcs or mono it skips (77), or fails when INLAY_TEST_NO_SKIP=1.
set -euo pipefail
if [ "$#" -ne 4 ]; then
  echo "usage: $0 SOURCE_DIR LIB_DIR WORK_DIR CC" >&2
  exit 2
fi
src=$1 libdir=$2 bin=$3 cc=$4
for tool in mcs mono; do
  if ! command -v "$tool" > /dev/null; then
    msg="$tool is not installed; scripts/install-deps.sh installs Debian's mono-mcs and mono-runtime"
    if [ "${INLAY_TEST_NO_SKIP:-}" = 1 ]; then
      echo "csharp_example: FAILED (INLAY_TEST_NO_SKIP=1): $msg" >&2
      exit 1
    fi
    echo "csharp_example: SKIPPED: $msg" >&2
    exit 77
  fi
done
fail() { echo "csharp_example: FAILED: $*" >&2; exit 1; }
cd "$src/examples/csharp"
echo "csharp_example: $(mcs --version), $(mono --version | head -1)"
mkdir -p "$bin"
cp Inlay.dll.config "$bin/"
"$cc" -std=c99 -I../../include -o "$bin/struct_layout" struct_layout.c
"$bin/struct_layout" > "$bin/layout.txt"
mcs -warnaserror+ -target:library -out:"$bin/Inlay.dll" Inlay/*.cs
mcs -warnaserror+ -out:"$bin/inlay-demo.exe" -r:"$bin/Inlay.dll" Demo.cs
mcs -warnaserror+ -out:"$bin/InlayTests.exe" -r:"$bin/Inlay.dll" Tests.cs
export LD_LIBRARY_PATH="$libdir"
mono "$bin/InlayTests.exe" ../../models/default "$bin/layout.txt" || fail "InlayTests.exe"

mono "$bin/inlay-demo.exe" ../../models/default > "$bin/demo.out" 2> "$bin/demo.err" ||
  { cat "$bin/demo.out" "$bin/demo.err"; fail "the demo failed"; }
cat "$bin/demo.out"
for expected in "load failed as expected: INLAY_ERR_IO" "loading [##############################] 100%" \
                "stop: Cancelled" "[processed "; do
  grep -qF "$expected" "$bin/demo.out" "$bin/demo.err" || fail "the demo's output lacks '$expected'"
done
[ "$(grep -c '^user: ' "$bin/demo.out")" -eq 2 ] || fail "the demo did not chat for two turns"
mono "$bin/inlay-demo.exe" --device cuda -n 4 ../../models/default > "$bin/cuda.out" 2> "$bin/cuda.err" ||
  { cat "$bin/cuda.out" "$bin/cuda.err"; fail "the demo failed with --device cuda"; }
grep -qE "running on cuda|device cuda is not available here \(INLAY_ERR_UNSUPPORTED" "$bin/cuda.out" "$bin/cuda.err" ||
  fail "--device cuda neither ran on a GPU nor said why not"
grep -h "device cuda" "$bin/cuda.err" || true
echo "csharp_example: passed"
