#!/usr/bin/env bash
# Installs inlay's build and test dependencies from Debian packages (bookworm or
# later). Run as root, or with sudo available. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake pkg-config ninja-build
  libfmt-dev nlohmann-json3-dev libpcre2-dev libsentencepiece-dev
  catch2 libbenchmark-dev
  python3
  time                              # GNU time: the peak RSS of scripts/perf-compare.sh (tests/perf)
  golang-go mono-mcs mono-runtime   # the Go and C# bindings' examples and tests (examples/go, examples/csharp)
  cargo rustc                       # the Rust binding's example and tests (examples/rust)
  clang libclang-rt-14-dev          # the libFuzzer targets (fuzz/, scripts/fuzz.sh)
)
# npm (and git) install llama.cpp's prebuilt libraries for the tests' cross-checks
# (scripts/llamacpp-peer.sh); node and npm may come from outside Debian, hence the check.
command -v npm > /dev/null || packages+=(nodejs npm)
command -v git > /dev/null || packages+=(git)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
