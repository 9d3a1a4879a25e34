#!/usr/bin/env bash
# scripts/perf-compare.sh end to end with a fake llama-bench (written here; it prints
# llama-bench's -o jsonl rows with fixed rates and logs its arguments) and the real inlay
# wrapped to log its runs: the same -t/-p/-n/-d reach both tools with -r 1, the order
# alternates between rounds, and the JSON holds every round's samples, their medians, the
# peak RSS of every run, the bandwidth (at the start and beside every round), both versions
# and the load. Then scripts/perf-chart.py draws it.
#   perf_compare_test.sh INLAY SOURCE_DIR
set -euo pipefail
inlay=$1 src=$2
fail() { echo "perf_compare_test: $*" >&2; exit 1; }
skip() {
  echo "perf_compare_test: $*" >&2
  if [ "${INLAY_TEST_NO_SKIP:-}" = 1 ]; then exit 1; fi
  exit 77
}
command -v python3 > /dev/null || skip "no python3: scripts/perf-compare.sh is not tested"
[ -x /usr/bin/time ] || skip "no GNU time (/usr/bin/time): scripts/perf-compare.sh is not tested"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log=$tmp/runs.log

cat > "$tmp/llama-bench" <<'FAKE'
#!/usr/bin/env bash
# Fake llama-bench: -m -t -p -n -d -r -o jsonl, one row per (size, depth).
set -euo pipefail
echo "llama $*" >> "$RUN_LOG"
m="" t="" p="512" n="128" d="0" r="5" o=""
while [ $# -gt 0 ]; do
  case $1 in
    -m) m=$2 ;; -t) t=$2 ;; -p) p=$2 ;; -n) n=$2 ;; -d) d=$2 ;; -r) r=$2 ;; -o) o=$2 ;;
    *) echo "fake llama-bench: unexpected $1" >&2; exit 1 ;;
  esac
  shift 2
done
[ "$o" = jsonl ] || { echo "fake llama-bench: -o jsonl expected" >&2; exit 1; }
row() {  # n_prompt n_gen n_depth ts
  printf '{"build_commit": "fake123", "build_number": 42, "cpu_info": "Fake CPU", "model_filename": "%s", ' "$m"
  printf '"n_threads": %s, "n_prompt": %s, "n_gen": %s, "n_depth": %s, "avg_ns": 1, "stddev_ns": 0, ' "$t" "$1" "$2" "$3"
  printf '"avg_ts": %s, "stddev_ts": 0.0, "samples_ns": [ 1 ],"samples_ts": [ %s ]}\n' "$4" "$4"
}
echo "fake llama-bench: loading" >&2
for pp in ${p//,/ }; do for dd in ${d//,/ }; do [ "$pp" = 0 ] || row "$pp" 0 "$dd" 1000.5; done; done
for tg in ${n//,/ }; do for dd in ${d//,/ }; do [ "$tg" = 0 ] || row 0 "$tg" "$dd" 50.25; done; done
FAKE
cat > "$tmp/inlay" <<WRAP
#!/usr/bin/env bash
if [ "\$1" = bench ] && [ "\$2" = -m ]; then echo "inlay \$*" >> "\$RUN_LOG"; fi
if [ "\$1" = bench ] && [ "\$2" = --membw ]; then echo "membw \$*" >> "\$RUN_LOG.membw"; fi
exec "$inlay" "\$@"
WRAP
chmod +x "$tmp/llama-bench" "$tmp/inlay"

model=$src/models/default-q8_0.gguf
out=$tmp/compare.json
RUN_LOG=$log LLAMA_BENCH=$tmp/llama-bench "$src/scripts/perf-compare.sh" --inlay "$tmp/inlay" -t 1 -p 8 -n 4 \
  -d 0,8 -r 2 --membw-mib 64 -o "$out" "$model" 2> "$tmp/stderr" || { cat "$tmp/stderr" >&2; fail "perf-compare.sh failed"; }

# The bandwidth measured at the start and before each of the two rounds.
[ "$(wc -l < "$log.membw")" = 3 ] || fail "bandwidth measured $(wc -l < "$log.membw") times, not 3"
# Round 1: inlay first; round 2: llama-bench first. Same settings, one repetition each.
order=$(cut -d' ' -f1 "$log" | tr '\n' ' ')
[ "$order" = "inlay llama llama inlay " ] || fail "run order was '$order'"
grep -q -- "-m $model -t 1 -p 8 -n 4 -d 0,8 -r 1 -o jsonl" "$log" || fail "llama-bench got other settings: $(cat "$log")"
grep -q -- "bench -m $model -t 1 -p 8 -n 4 -d 0,8 -r 1 " "$log" || fail "inlay got other settings: $(cat "$log")"

python3 - "$out" "$model" <<'EOF'
import json, sys
report, model = json.load(open(sys.argv[1])), sys.argv[2]
def check(cond, what):
    if not cond:
        sys.exit(f"perf_compare_test: {what}: {json.dumps(report)[:2000]}")
check(report["threads"] == 1 and report["rounds"] == 2, "threads/rounds")
check(report["n_prompt"] == [8] and report["n_gen"] == [4] and report["n_depth"] == [0, 8], "sizes")
check(report["membw_source"] == "measured" and report["membw_bytes_per_s"] > 0, "membw")
check(len(report["models"][0]["membw_bytes_per_s"]) == 2 and all(b > 0 for b in report["models"][0]["membw_bytes_per_s"]),
      "a bandwidth per round")
low, high = report["membw_range"]
check(0 < low <= report["membw_bytes_per_s"] <= high, "bandwidth range")
check(low <= min(report["models"][0]["membw_bytes_per_s"]) and max(report["models"][0]["membw_bytes_per_s"]) <= high,
      "the rounds' readings inside the range")
check("load average" in report["uptime_start"] and "load average" in report["uptime_end"], "uptime")
check(report["llama_cpp"]["build_commit"] == "fake123" and report["llama_cpp"]["build_number"] == 42, "llama version")
check(report["inlay"]["version"].startswith("inlay "), "inlay version")
check(len(report["models"]) == 1, "one model")
m = report["models"][0]
check(m["path"] == model and m["name"] == "default-q8_0.gguf", "model name")
names = ["pp8", "pp8 @ d8", "tg4", "tg4 @ d8"]
for tool in ("inlay", "llama_cpp"):
    check([t["name"] for t in m[tool]["tests"]] == names, f"{tool} tests")
    check(len(m[tool]["peak_rss_bytes"]) == 2 and all(x > 1 << 20 for x in m[tool]["peak_rss_bytes"]), f"{tool} rss")
    for t in m[tool]["tests"]:
        check(len(t["samples_ts"]) == 2 and all(s > 0 for s in t["samples_ts"]), f"{tool} {t['name']} samples")
        check(t["median_ts"] == sum(t["samples_ts"]) / 2, f"{tool} {t['name']} median")
for t in m["llama_cpp"]["tests"]:
    check(t["samples_ts"] == [1000.5] * 2 if t["n_prompt"] else t["samples_ts"] == [50.25] * 2, "llama samples")
for t in m["inlay"]["tests"]:
    if t["n_gen"]:
        check(abs(t["bytes_per_s"] - t["median_ts"] * t["bytes_per_token"]) <= 1e-9 * t["bytes_per_s"], "bytes_per_s")
        # Each round's rate against its own bandwidth reading, then the median of the two.
        shares = [ts * t["bytes_per_token"] / b for ts, b in zip(t["samples_ts"], m["membw_bytes_per_s"])]
        check(abs(t["roofline_share"] - sum(shares) / 2) < 1e-12, "share")
        model_membw = sum(m["membw_bytes_per_s"]) / 2
        check(abs(t["roofline_ts"] * t["bytes_per_token"] - model_membw) < 1e-3 * model_membw, "roofline")
    else:
        check("bytes_per_token" not in t, "pp has no decode bytes")
EOF

python3 "$src/scripts/perf-chart.py" "$out" --svg "$tmp/chart.svg" --md "$tmp/table.md" || fail "perf-chart.py failed"
python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$tmp/chart.svg" || fail "the SVG is not XML"
grep -q "| default-q8_0.gguf | tg4 @ d8 |" "$tmp/table.md" || fail "table: $(cat "$tmp/table.md")"

# A missing llama-bench is a message, not a stack of errors.
if env -u LLAMA_BENCH "$src/scripts/perf-compare.sh" --inlay "$inlay" -o "$tmp/x.json" "$model" 2> "$tmp/err"; then
  fail "ran without llama-bench"
fi
grep -q "LLAMA_BENCH" "$tmp/err" || fail "no message naming LLAMA_BENCH: $(cat "$tmp/err")"
echo "perf_compare_test: ok"
