#!/usr/bin/env bash
# packaging_install (ctest): installs this build into a temporary prefix with
# `cmake --install`, then builds tests/packaging/consumer against the installed files
# only, twice (a CMake project with find_package(inlay CONFIG), and cc with pkg-config),
# runs both consumers on the default model and compares what they print. Removes the
# temporary directory on exit. Fails (exit 1) on any mismatch.
#
#   install_test.sh BUILD_DIR SOURCE_DIR CONFIG LIBDIR VERSION ABI_VERSION CMAKE CC CXX SANITIZE
#
# SANITIZE is the build's INLAY_SANITIZE ("" for none): a sanitized libinlay.so needs its
# sanitizer runtime loaded first, so the consumers are then built with the same
# -fsanitize flags, as a host program testing against such a build would be.
set -euo pipefail
if [ "$#" -ne 10 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR CONFIG LIBDIR VERSION ABI_VERSION CMAKE CC CXX SANITIZE" >&2
  exit 2
fi
build=$1 source=$2 config=$3 libdir=$4 version=$5 abi=$6 cmake=$7 cc=$8 cxx=$9 sanitize=${10}
model="$source/models/default-q8_0.gguf"
failures=0
fail() { echo "packaging_install: FAILED: $*" >&2; failures=$((failures + 1)); }
die() { echo "packaging_install: FAILED: $*" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/inlay-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
unset LD_LIBRARY_PATH PKG_CONFIG_LIBDIR CMAKE_PREFIX_PATH inlay_DIR
san_flags=""
if [ -n "$sanitize" ]; then
  san_flags="-fsanitize=$sanitize -fno-omit-frame-pointer"
  echo "packaging_install: sanitized build ($sanitize): consumers are built with $san_flags"
fi

# 1. Install.
"$cmake" --install "$build" --prefix "$prefix" ${config:+--config "$config"} > "$tmp/install.log" ||
  { cat "$tmp/install.log"; die "cmake --install failed"; }
lib="$prefix/$libdir"
for f in include/inlay/inlay.h include/inlay/inlay.hpp "$libdir/libinlay.so" "$libdir/libinlay.so.$abi" \
         "$libdir/cmake/inlay/inlayConfig.cmake" "$libdir/cmake/inlay/inlayConfigVersion.cmake" \
         "$libdir/cmake/inlay/inlayTargets.cmake" "$libdir/pkgconfig/inlay.pc"; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# Only the public headers, and no static archive of the core.
extra_headers=$(cd "$prefix" && find include -type f ! -name inlay.h ! -name inlay.hpp)
[ -z "$extra_headers" ] || fail "headers other than inlay.h and inlay.hpp installed: $extra_headers"
archives=$(cd "$prefix" && find . -name '*.a')
[ -z "$archives" ] || fail "static archives installed: $archives"
soname=$(readelf -d "$lib/libinlay.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libinlay.so.$abi" ] || fail "SONAME is '$soname', expected libinlay.so.$abi"
# The installed package and .pc name neither the build nor the source tree nor the core.
if grep -rlF -e "$build" -e "$source" -e inlay_static -e inlay_core "$lib/cmake/inlay" "$lib/pkgconfig"; then
  fail "the installed CMake package or inlay.pc refers to the build tree or the static core"
fi

# 2. The consumer, copied out of the source tree so that nothing points back into it.
cp -r "$source/tests/packaging/consumer" "$tmp/consumer"

# 2a. CMake: find_package(inlay VERSION EXACT CONFIG REQUIRED).
CFLAGS="$san_flags" CXXFLAGS="$san_flags" LDFLAGS="$san_flags" \
"$cmake" -S "$tmp/consumer" -B "$tmp/cmake-build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DINLAY_EXPECT_VERSION="$version" -DINLAY_EXPECT_ABI="$abi" > "$tmp/cmake-configure.log" 2>&1 ||
  { cat "$tmp/cmake-configure.log"; die "configuring the CMake consumer failed"; }
grep -qF -- "inlay_DIR: $lib/cmake/inlay" "$tmp/cmake-configure.log" ||
  fail "find_package(inlay) did not take the installed package: $(grep inlay_DIR "$tmp/cmake-configure.log")"
"$cmake" --build "$tmp/cmake-build" --verbose > "$tmp/cmake-build.log" 2>&1 ||
  { cat "$tmp/cmake-build.log"; die "building the CMake consumer failed"; }
if grep -nF -e "$build" -e "$source" "$tmp/cmake-build/compile_commands.json" "$tmp/cmake-build.log"; then
  fail "the CMake consumer's compile or link commands name the build or source tree"
fi
grep -qF -- "-I$prefix/include" "$tmp/cmake-build/compile_commands.json" ||
  grep -qF -- "-isystem $prefix/include" "$tmp/cmake-build/compile_commands.json" ||
  fail "the CMake consumer is not compiled with the installed include directory"

# 2b. pkg-config.
export PKG_CONFIG_PATH="$lib/pkgconfig"
pc_dir=$(pkg-config --variable=pcfiledir inlay) || die "pkg-config does not find inlay"
[ "$pc_dir" -ef "$lib/pkgconfig" ] || fail "pkg-config took inlay.pc from $pc_dir"
pc_version=$(pkg-config --modversion inlay)
[ "$pc_version" = "$version" ] || fail "pkg-config --modversion inlay is '$pc_version', expected $version"
pc_abi=$(pkg-config --variable=abi_version inlay)
[ "$pc_abi" = "$abi" ] || fail "inlay.pc's abi_version is '$pc_abi', expected $abi"
pc_flags=$(pkg-config --cflags --libs inlay)
echo "packaging_install: pkg-config --cflags --libs inlay: $pc_flags"
if grep -qF -e "$build" -e "$source" <<< "$pc_flags"; then fail "pkg-config's flags name the build or source tree"; fi
pc_libdir=$(pkg-config --variable=libdir inlay)
mkdir -p "$tmp/pc-build"
# shellcheck disable=SC2086  # the flags are words
"$cc" -std=c99 -Wall -Wextra -Werror $san_flags -o "$tmp/pc-build/consumer" "$tmp/consumer/consumer.c" \
  $pc_flags -Wl,-rpath,"$pc_libdir" -ldl > "$tmp/pc-build.log" 2>&1 ||
  { cat "$tmp/pc-build.log"; die "building the pkg-config consumer failed"; }

# 3. Run both: each passes its own checks, loads the installed library and prints the same.
for consumer in "$tmp/cmake-build/consumer" "$tmp/pc-build/consumer"; do
  needed=$(readelf -d "$consumer" | sed -n 's/.*(NEEDED).*\[\(libinlay[^]]*\)\]/\1/p')
  [ "$needed" = "libinlay.so.$abi" ] || fail "$consumer needs '$needed', expected libinlay.so.$abi"
  out="$consumer.out"
  if ! "$consumer" "$version" "$abi" "$model" > "$out" 2> "$out.err"; then
    cat "$out" "$out.err"
    fail "$consumer failed"
    continue
  fi
  cat "$out"
  loaded=$(sed -n 's/^library: //p' "$out")
  [ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$lib/libinlay.so.$abi")" ] ||
    fail "$consumer loaded '$loaded', not the installed $lib/libinlay.so.$abi"
done
if [ -f "$tmp/cmake-build/consumer.out" ] && [ -f "$tmp/pc-build/consumer.out" ]; then
  a=$(grep -v '^library: ' "$tmp/cmake-build/consumer.out")
  b=$(grep -v '^library: ' "$tmp/pc-build/consumer.out")
  [ "$a" = "$b" ] || fail "the two consumers printed different results"
fi

if [ "$failures" -ne 0 ]; then
  echo "packaging_install: $failures check(s) failed" >&2
  exit 1
fi
echo "packaging_install: all checks passed"
