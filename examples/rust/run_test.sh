#!/usr/bin/env bash
# ctest rust_example: the steps of examples/rust/README.md, against a build's libinlay.
#
#   run_test.sh LIB_DIR TARGET_DIR [SANITIZE CC]
#
# LIB_DIR holds libinlay.so (INLAY_LIB_DIR for build.rs), TARGET_DIR is cargo's output
# (CARGO_TARGET_DIR). Runs `cargo test`, then the example on models/default (its output
# is printed and checked), with --device cuda (a clear error where no CUDA device
# serves; INLAY_TEST_EXPECT_GPU=1 where one must), on a missing model, and with bad
# usage. Exit 77 (skip) without cargo, 1 on any failure.
#
# SANITIZE is the build's INLAY_SANITIZE, CC its C compiler. An instrumented libinlay
# needs the ASan (TSan) runtime loaded before it, which Rust binaries cannot arrange at
# link time on a stable toolchain (rustc drops a runtime no Rust code calls, and puts
# link arguments after -linlay), so cargo runs them through a runner that preloads the
# compiler's runtime; cargo and rustc themselves stay uninstrumented.
set -euo pipefail
if [ "$#" -ne 2 ] && [ "$#" -ne 4 ]; then
  echo "usage: $0 LIB_DIR TARGET_DIR [SANITIZE CC]" >&2
  exit 2
fi
lib_dir=$1 target_dir=$2 sanitize=${3:-} cc=${4:-cc}
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "rust_example: FAILED: $*" >&2; exit 1; }
skip() {
  if [ "${INLAY_TEST_NO_SKIP:-0}" = 1 ]; then fail "$* (INLAY_TEST_NO_SKIP=1: not skipping)"; fi
  echo "rust_example: SKIPPED: $*"
  exit 77
}

if ! command -v cargo > /dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"   # a rustup install not on PATH
fi
command -v cargo > /dev/null ||
  skip "cargo not found in PATH or ~/.cargo/bin (Debian: apt-get install cargo rustc)"
echo "rust_example: $(cargo --version), $(rustc --version)"

export INLAY_LIB_DIR=$lib_dir CARGO_TARGET_DIR=$target_dir CARGO_NET_OFFLINE=true
runtime=""
case ",$sanitize," in
  *,address,*) runtime=libasan.so ;;
  *,thread,*) runtime=libtsan.so ;;
esac
if [ -n "$runtime" ]; then
  preload=$("$cc" -print-file-name="$runtime")
  [ -f "$preload" ] || fail "sanitized build ($sanitize): $cc finds no $runtime"
  host=$(rustc -vV | sed -n 's/^host: //p')
  runner_var="CARGO_TARGET_$(echo "$host" | tr 'a-z-' 'A-Z_')_RUNNER"
  export "$runner_var=env LD_PRELOAD=$preload"
  echo "rust_example: sanitized build ($sanitize): the Rust binaries run with LD_PRELOAD=$preload"
fi
cd "$here"

# 1. The wrapper's tests.
cargo test --offline || fail "cargo test"

# 2. The example, as the README runs it.
out=$(mktemp "${TMPDIR:-/tmp}/inlay-rust-example.XXXXXX")
trap 'rm -f "$out"' EXIT
demo() {
  local want=$1
  shift
  local rc=0
  echo "\$ cargo run --offline -- $*"
  cargo run --offline --quiet -- "$@" > "$out" 2>&1 || rc=$?
  cat "$out"
  [ "$rc" = "$want" ] || fail "inlay-demo $* exited $rc, not $want"
}
expect() { grep -qE -- "$1" "$out" || fail "no line matching '$1' in the output above"; }

demo 0 ../../models/default
expect '^inlay [0-9.]+ \(ABI 1\) from Rust$'
expect '^loading \.\./\.\./models/default \[#{40}\] done$'
expect '^model: default \(llama, 984320 parameters, context 256 tokens\) on (cpu|cuda:[0-9]+)$'
expect '^== streaming ==$'
expect '^\[[0-9]+ tokens, stopped: (EndOfGeneration|MaxTokens)'
expect '^\[[0-9] of at most 200 tokens, stopped: Cancelled\]$'
expect '^== chat ==$'
[ "$(grep -cE '^\[[0-9]+ new prompt tokens processed; the conversation is now [0-9]+ tokens\]$' "$out")" = 2 ] ||
  fail "two chat turns expected"
expect '^missing file -> Io: INLAY_ERR_IO: cannot open'
expect '^top_p 2.0 -> InvalidArgument: INLAY_ERR_INVALID_ARGUMENT: '

if [ "${INLAY_TEST_EXPECT_GPU:-0}" = 1 ]; then
  demo 0 ../../models/default --device cuda
  expect ') on cuda:0$'
else
  demo 1 ../../models/default --device cuda
  expect '^inlay-demo: INLAY_ERR_UNSUPPORTED: .*cuda'
  expect '^inlay-demo: no CUDA device here'
fi
demo 1 ../../models/no-such-model
expect "^inlay-demo: INLAY_ERR_IO: cannot open '../../models/no-such-model'"
demo 2 ../../models/default --device gpu
expect "^inlay-demo: INLAY_ERR_INVALID_ARGUMENT: unknown device 'gpu'"
echo "rust_example: passed"
