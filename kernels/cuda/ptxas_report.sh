#!/bin/sh
# Compiler launcher of inlay_kernels_cuda (CUDA_COMPILER_LAUNCHER): runs the nvcc command
# line it is given, files ptxas's resource report (--resource-usage: registers, stack,
# spill stores/loads per kernel and architecture) of the source being compiled as
# REPORT_DIR/<source file name>.txt, and passes every other line of the compiler's
# stderr through. tests/kernels reads the reports (no second compilation).
#   ptxas_report.sh REPORT_DIR nvcc ARGS...
set -u
dir=$1
shift
src=""
prev=""
for arg in "$@"; do
  if [ "$prev" = "-c" ]; then src=$arg; fi
  prev=$arg
done
mkdir -p "$dir"
# ptxas's report lines: "ptxas info    : ..." and "    N bytes stack frame, ...".
report='^(ptxas info +:|ptxas +\.| +[0-9]+ bytes stack frame)'
err=$(mktemp)
"$@" 2>"$err"
rc=$?
if [ -n "$src" ]; then
  out="$dir/$(basename "$src").txt"
  grep -E "$report" "$err" >"$out.tmp"
  mv "$out.tmp" "$out"
fi
grep -vE "$report" "$err" >&2
rm -f "$err"
exit $rc
