#!/usr/bin/env bash
# go_example (ctest): runs the commands of examples/go/README.md against this build and
# the default model: go vet, go test (the binding's tests), and the demo, once on the
# default device and once asking for CUDA (which must either run there or say clearly
# that it cannot and go on on the CPU). Go's caches live under WORK_DIR, and no module
# is fetched from anywhere (GOPROXY=off: the module has no requirements).
#
#   test_example.sh SOURCE_DIR LIB_DIR WORK_DIR CC
#
# Without the Go toolchain it skips (77), or fails when INLAY_TEST_NO_SKIP=1.
set -euo pipefail
if [ "$#" -ne 4 ]; then
  echo "usage: $0 SOURCE_DIR LIB_DIR WORK_DIR CC" >&2
  exit 2
fi
src=$1 libdir=$2 work=$3 cc=$4
if ! command -v go > /dev/null; then
  msg="the Go toolchain (go) is not installed; scripts/install-deps.sh installs Debian's golang-go"
  if [ "${INLAY_TEST_NO_SKIP:-}" = 1 ]; then
    echo "go_example: FAILED (INLAY_TEST_NO_SKIP=1): $msg" >&2
    exit 1
  fi
  echo "go_example: SKIPPED: $msg" >&2
  exit 77
fi
mkdir -p "$work"
export GOCACHE="$work/gocache" GOPATH="$work/gopath" GOPROXY=off GOFLAGS= CGO_ENABLED=1 CC="$cc"
export CGO_CFLAGS="-I$src/include" CGO_LDFLAGS="-L$libdir -Wl,-rpath,$libdir"
cd "$src/examples/go"
echo "go_example: $(go version)"
go vet ./...
go test -count=1 ./...

fail() { echo "go_example: FAILED: $*" >&2; exit 1; }
go build -o "$work/inlay-demo" ./cmd/inlay-demo
"$work/inlay-demo" ../../models/default > "$work/demo.out" 2> "$work/demo.err" ||
  { cat "$work/demo.out" "$work/demo.err"; fail "the demo failed"; }
cat "$work/demo.out"
for expected in "load failed as expected: INLAY_ERR_IO" "loading [##############################] 100%" \
                "stop: cancelled" "[processed "; do
  grep -qF "$expected" "$work/demo.out" "$work/demo.err" || fail "the demo's output lacks '$expected'"
done
[ "$(grep -c '^user: ' "$work/demo.out")" -eq 2 ] || fail "the demo did not chat for two turns"
"$work/inlay-demo" -device cuda -n 4 ../../models/default > "$work/cuda.out" 2> "$work/cuda.err" ||
  { cat "$work/cuda.out" "$work/cuda.err"; fail "the demo failed with -device cuda"; }
grep -qE "running on cuda|device cuda is not available here \(INLAY_ERR_UNSUPPORTED" "$work/cuda.out" "$work/cuda.err" ||
  fail "-device cuda neither ran on a GPU nor said why not"
grep -h "device cuda" "$work/cuda.err" || true
echo "go_example: passed"
