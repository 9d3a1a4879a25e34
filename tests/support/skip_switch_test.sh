#!/usr/bin/env bash
# The skip switch (tests/support/skip.h), on a Catch2 program and a C ABI test with an
# empty shared dir: without INLAY_TEST_NO_SKIP a missing input skips (visibly, counted
# by the program and logged to test-skips.log); with INLAY_TEST_NO_SKIP=1 it fails with
# the same message and logs nothing.
#   skip_switch_test.sh CATCH_PROGRAM CASE_NAME C_PROGRAM
set -uo pipefail
catch_program=$1 case_name=$2 c_program=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/empty-shared" "$tmp/bin"
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }
expect_in() {  # FILE TEXT
  grep -qF -- "$2" "$1" || { fail "'$2' not in $1:"; cat "$1"; }
}
run() {  # NO_SKIP_VALUE OUT PROGRAM ARGS...: the exit status
  local no_skip=$1 out=$2
  shift 2
  env -u INLAY_TEST_NO_SKIP ${no_skip:+INLAY_TEST_NO_SKIP=$no_skip} INLAY_SHARED_DIR="$tmp/empty-shared" \
    INLAY_BINARY_DIR="$tmp/bin" "$@" > "$out" 2>&1
}
log="$tmp/bin/test-skips.log"

# A Catch2 case: skipped and counted, then failed under the switch.
run "" "$tmp/catch.txt" "$catch_program" "$case_name"; rc=$?
[ "$rc" -eq 0 ] || fail "catch program without the switch exited $rc"
expect_in "$tmp/catch.txt" "SKIPPED: $tmp/empty-shared/testdata"
expect_in "$tmp/catch.txt" "inlay: 1 test case(s) skipped for a missing input"
expect_in "$log" "$(basename "$catch_program")	missing	$case_name: $tmp/empty-shared/testdata"
run 1 "$tmp/catch-no-skip.txt" "$catch_program" "$case_name"; rc=$?
[ "$rc" -ne 0 ] || fail "catch program exited 0 under INLAY_TEST_NO_SKIP=1"
expect_in "$tmp/catch-no-skip.txt" "INLAY_TEST_NO_SKIP=1 forbids skipping"
expect_in "$tmp/catch-no-skip.txt" "inlay: 0 test case(s) skipped for a missing input"
# INLAY_TEST_NO_SKIP takes only 1: another value leaves skips as skips.
run 0 "$tmp/catch-zero.txt" "$catch_program" "$case_name"; rc=$?
[ "$rc" -eq 0 ] || fail "catch program with INLAY_TEST_NO_SKIP=0 exited $rc"
[ "$(wc -l < "$log")" -eq 2 ] || { fail "expected 2 lines in $log:"; cat "$log"; }

# A C ABI test: exit 77 (ctest's skip) and a log line, then exit 1 under the switch.
rm -f "$log"
run "" "$tmp/c.txt" "$c_program"; rc=$?
[ "$rc" -eq 77 ] || fail "C test without the switch exited $rc, expected 77"
expect_in "$tmp/c.txt" "SKIPPED: $tmp/empty-shared/testdata"
expect_in "$log" "$(basename "$c_program")	missing	$tmp/empty-shared/testdata"
run 1 "$tmp/c-no-skip.txt" "$c_program"; rc=$?
[ "$rc" -eq 1 ] || fail "C test under INLAY_TEST_NO_SKIP=1 exited $rc, expected 1"
expect_in "$tmp/c-no-skip.txt" "INLAY_TEST_NO_SKIP=1 forbids skipping"
[ "$(wc -l < "$log")" -eq 1 ] || { fail "expected 1 line in $log:"; cat "$log"; }

if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "skip switch: all checks passed"
