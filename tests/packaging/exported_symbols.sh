#!/usr/bin/env bash
# packaging_symbols (ctest): libinlay.so exports the C ABI and nothing else. Reads the
# dynamic symbol table (nm -D --defined-only) and fails on any defined symbol whose name
# does not start with inlay_ (the version nodes of the version script aside), and on any
# function declared INLAY_API in inlay.h that is not exported. Also reads its DT_NEEDED
# entries (objdump -p, beside nm): no CUDA library may be one, since the CUDA backend opens
# cuBLAS and NVRTC at run time and links the CUDA runtime statically, so the library loads
# on machines without the toolkit or a driver.
#
#   exported_symbols.sh NM LIBRARY VERSION_SCRIPT HEADER
set -euo pipefail
if [ "$#" -ne 4 ]; then
  echo "usage: $0 NM LIBRARY VERSION_SCRIPT HEADER" >&2
  exit 2
fi
nm=$1 library=$2 map=$3 header=$4
failures=0
fail() { echo "packaging_symbols: FAILED: $*" >&2; failures=$((failures + 1)); }

# Version nodes ("INLAY_1 {") of the version script appear as absolute symbols.
mapfile -t nodes < <(sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_.]*\)[[:space:]]*{.*/\1/p' "$map")
[ "${#nodes[@]}" -gt 0 ] || fail "no version node found in $map"
# "ADDRESS TYPE NAME[@VERSION]" per defined symbol.
table=$("$nm" -D --defined-only "$library") || { echo "packaging_symbols: $nm -D failed on $library" >&2; exit 1; }
exported=()
while read -r -a fields; do
  [ "${#fields[@]}" -ge 2 ] || continue
  name=${fields[-1]%%@*}
  type=${fields[-2]}
  if [[ $name == inlay_* ]]; then
    exported+=("$name")
    continue
  fi
  node=0
  for n in "${nodes[@]}"; do [ "$type" = A ] && [ "$name" = "$n" ] && node=1; done
  [ "$node" -eq 1 ] || fail "exported symbol outside the C ABI: ${fields[*]}"
done <<< "$table"
echo "packaging_symbols: ${#exported[@]} inlay_* symbols exported (version nodes: ${nodes[*]})"
# Every function the header declares is exported.
mapfile -t declared < <(grep -oE '^INLAY_API[^(]*\binlay_[a-z0-9_]+\(' "$header" | grep -oE 'inlay_[a-z0-9_]+\($' | tr -d '(')
[ "${#declared[@]}" -ge 10 ] || fail "found only ${#declared[@]} INLAY_API functions in $header"
# (a lookup table, not a pipe into grep -q: grep quitting at the first match could end
# the writer with SIGPIPE, which pipefail turns into a false failure)
declare -A is_exported=()
for f in "${exported[@]}"; do is_exported[$f]=1; done
for f in "${declared[@]}"; do
  [ -n "${is_exported[$f]:-}" ] || fail "$f is declared in inlay.h but not exported"
done
objdump=$(dirname "$nm")/objdump
[ -x "$objdump" ] || objdump=objdump
needed=$("$objdump" -p "$library" | awk '$1 == "NEEDED" { print $2 }') ||
  { echo "packaging_symbols: $objdump -p failed on $library" >&2; exit 1; }
[ -n "$needed" ] || fail "no DT_NEEDED entry read from $library"
while read -r lib; do
  case $lib in
    libcuda.so* | libcudart.so* | libcublas* | libnvrtc* | libnccl*) fail "libinlay.so needs $lib at load time" ;;
  esac
done <<< "$needed"
echo "packaging_symbols: needs $(echo $needed | tr '\n' ' ')"
if [ "$failures" -ne 0 ]; then
  echo "packaging_symbols: $failures check(s) failed" >&2
  exit 1
fi
echo "packaging_symbols: all ${#declared[@]} functions of inlay.h exported, nothing else"
