#!/usr/bin/env bash
# inlay against llama.cpp on the same machine in one sitting:
#   scripts/perf-compare.sh --llama-bench PATH -o OUT.json [-t 2] [-p 128] [-n 64] [-d 0]
#       [-r 5] [--inlay PATH] [--membw-gbps X | --membw-mib M] MODEL.gguf...
# For every model it runs R rounds; each round is one `inlay bench -r 1` and one
# `llama-bench -r 1` with the same -t/-p/-n/-d (lists as both tools take them), the
# order alternating between rounds, so both tools see the same machine state. It
# records every round's tokens/s per test and each run's peak resident memory (GNU time's
# %M), measures the read bandwidth at the start and again before every round (inlay bench
# --membw over --membw-mib MiB, 1024 by default; a VM's bandwidth can move 2x within
# minutes with its neighbours, so each round's decode is set against the bandwidth measured
# beside it) unless --membw-gbps gives one figure, notes `uptime` at the start and the end, and
# writes one JSON file: the settings, both tools' versions (llama.cpp's build commit from
# its own report), and per model and test the samples and their median.
# scripts/perf-chart.py turns it into a chart and a table (docs/perf/README.md).
# llama-bench comes from --llama-bench or $LLAMA_BENCH; inlay from --inlay, $INLAY or
# build/tools/inlay. Needs python3 (standard library) to assemble the JSON.
set -euo pipefail

usage() {
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "perf-compare: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
inlay=${INLAY:-$root/build/tools/inlay}
llama_bench=${LLAMA_BENCH:-}
threads=2 n_prompt=128 n_gen=64 n_depth=0 rounds=5 out="" membw_gbps="" membw_mib=1024
models=()
while [ $# -gt 0 ]; do
  case $1 in
    -t|--threads) threads=${2:?}; shift 2 ;;
    -p|--n-prompt) n_prompt=${2:?}; shift 2 ;;
    -n|--n-gen) n_gen=${2:?}; shift 2 ;;
    -d|--n-depth) n_depth=${2:?}; shift 2 ;;
    -r|--rounds) rounds=${2:?}; shift 2 ;;
    -o|--output) out=${2:?}; shift 2 ;;
    --inlay) inlay=${2:?}; shift 2 ;;
    --llama-bench) llama_bench=${2:?}; shift 2 ;;
    --membw-gbps) membw_gbps=${2:?}; shift 2 ;;
    --membw-mib) membw_mib=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "perf-compare: unknown option $1" >&2; usage ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || { echo "perf-compare: no model given" >&2; usage; }
[ -n "$out" ] || { echo "perf-compare: -o OUT.json is required" >&2; usage; }
[ -n "$llama_bench" ] || die "give llama-bench's path with --llama-bench or LLAMA_BENCH"
[ -x "$llama_bench" ] || die "$llama_bench is not an executable"
[ -x "$inlay" ] || die "$inlay is not an executable (build it, or pass --inlay)"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "-r expects a positive number of rounds, got '$rounds'"
for m in "${models[@]}"; do [ -f "$m" ] || die "$m is not a file"; done
command -v python3 > /dev/null || die "python3 is not installed"
gnu_time=/usr/bin/time
[ -x "$gnu_time" ] || die "$gnu_time (GNU time, for the peak resident memory) is not installed"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Runs a tool under GNU time: stdout to $1.out, the peak RSS in KiB to $1.rss.
timed() {
  local name=$1
  shift
  if ! "$gnu_time" -f %M -o "$work/$name.rss" "$@" > "$work/$name.out" 2> "$work/$name.err"; then
    echo "perf-compare: failed: $*" >&2
    tail -5 "$work/$name.err" >&2
    exit 1
  fi
}

uptime > "$work/uptime_start"
if [ -n "$membw_gbps" ]; then
  echo "given" > "$work/membw_source"
  python3 -c 'import sys; print(float(sys.argv[1]) * 1e9)' "$membw_gbps" > "$work/given.membw"
else
  echo "measured" > "$work/membw_source"
fi
# The read bandwidth now (the given figure, else measured) in $work/NAME.membw, bytes/s;
# its GB/s on stdout.
round_membw() {
  local name=$1
  if [ -n "$membw_gbps" ]; then
    cp "$work/given.membw" "$work/$name.membw"
  else
    "$inlay" bench --membw --membw-mib "$membw_mib" -t "$threads" --json > "$work/$name.membw.json"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["membw_bytes_per_s"])' "$work/$name.membw.json" \
      > "$work/$name.membw"
  fi
  python3 -c 'import sys; print(float(sys.argv[1]) / 1e9)' "$(cat "$work/$name.membw")"
}
round_membw start > /dev/null
"$inlay" --version > "$work/inlay_version"

for i in "${!models[@]}"; do
  m=${models[$i]}
  for ((r = 0; r < rounds; r++)); do
    membw_gbps_now=$(round_membw "m${i}_r${r}")
    inlay_run() {
      timed "m${i}_r${r}_inlay" "$inlay" bench -m "$m" -t "$threads" -p "$n_prompt" -n "$n_gen" -d "$n_depth" \
        -r 1 --membw-gbps "$membw_gbps_now" --json
    }
    llama_run() {
      timed "m${i}_r${r}_llama" "$llama_bench" -m "$m" -t "$threads" -p "$n_prompt" -n "$n_gen" -d "$n_depth" \
        -r 1 -o jsonl
    }
    if ((r % 2 == 0)); then inlay_run; llama_run; else llama_run; inlay_run; fi
    echo "perf-compare: $(basename "$m") round $((r + 1))/$rounds done" >&2
  done
done
uptime > "$work/uptime_end"

python3 - "$work" "$out" "$threads" "$rounds" "$n_prompt" "$n_gen" "$n_depth" "$inlay" "$llama_bench" \
  "${models[@]}" <<'EOF'
import datetime, json, os, platform, socket, statistics, sys

work, out, threads, rounds, n_prompt, n_gen, n_depth, inlay, llama_bench = sys.argv[1:10]
models = sys.argv[10:]
threads, rounds = int(threads), int(rounds)
sizes = lambda text: [int(x) for x in text.split(",")]

def read(name):
    with open(os.path.join(work, name)) as f:
        return f.read().strip()

def rss_bytes(name):
    # GNU time may print a note (a signal, a status) before the figure: the last line is %M.
    return int(read(name + ".rss").splitlines()[-1]) * 1024

def cpu_name():
    info = read_text("/proc/cpuinfo").splitlines()
    names = [line.split(":", 1)[1].strip() for line in info if line.startswith("model name")]
    return names[0] if names else platform.processor()

def read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""

def key(t):
    return (t["n_prompt"], t["n_gen"], t.get("n_depth", 0))

def test_name(k):
    p, n, d = k
    return (f"pp{p}" if p else f"tg{n}") + (f" @ d{d}" if d else "")

def collect(per_round, extra=None):
    """per_round: for each round a list of test rows with one sample each."""
    tests = {}
    for rows in per_round:
        for row in rows:
            t = tests.setdefault(key(row), {"name": test_name(key(row)), "n_prompt": row["n_prompt"],
                                            "n_gen": row["n_gen"], "n_depth": key(row)[2], "samples_ts": []})
            t["samples_ts"].append(row["ts"])
            if extra:
                extra(t, row)
    for t in tests.values():
        t["median_ts"] = statistics.median(t["samples_ts"])
    return list(tests.values())

round_membw = [[float(read(f"m{i}_r{r}.membw")) for r in range(rounds)] for i in range(len(models))]
all_membw = [float(read("start.membw"))] + [b for per_model in round_membw for b in per_model]
membw = statistics.median(all_membw)
report = {
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "host": socket.gethostname(),
    "cpu": cpu_name(),
    "threads": threads,
    "rounds": rounds,
    "n_prompt": sizes(n_prompt),
    "n_gen": sizes(n_gen),
    "n_depth": sizes(n_depth),
    "uptime_start": read("uptime_start"),
    "uptime_end": read("uptime_end"),
    "membw_bytes_per_s": membw,  # the median of every reading (the start's and each round's)
    "membw_range": [min(all_membw), max(all_membw)],
    "membw_source": read("membw_source"),
    "inlay": {"path": inlay, "version": read("inlay_version")},
    "llama_cpp": {"path": llama_bench},
    "models": [],
}
for i, path in enumerate(models):
    inlay_rounds, llama_rounds, inlay_rss, llama_rss, load_s = [], [], [], [], []
    for r in range(rounds):
        doc = json.loads(read(f"m{i}_r{r}_inlay.out"))
        inlay_rounds.append([dict(t, ts=t["samples_ts"][0]) for t in doc["tests"]])
        inlay_rss.append(rss_bytes(f"m{i}_r{r}_inlay"))
        load_s.append(doc["load_s"])
        rows = [json.loads(line) for line in read(f"m{i}_r{r}_llama.out").splitlines() if line.strip()]
        if not rows:
            sys.exit(f"perf-compare: llama-bench printed no result for {path}")
        llama_rounds.append([dict(row, ts=row["avg_ts"]) for row in rows])
        llama_rss.append(rss_bytes(f"m{i}_r{r}_llama"))
        report["llama_cpp"].setdefault("build_commit", rows[0].get("build_commit"))
        report["llama_cpp"].setdefault("build_number", rows[0].get("build_number"))
        report["llama_cpp"].setdefault("cpu_info", rows[0].get("cpu_info"))

    def decode_bytes(t, row):
        if "bytes_per_token" in row:
            t["bytes_per_token"] = row["bytes_per_token"]

    inlay_tests = collect(inlay_rounds, decode_bytes)
    model_membw = statistics.median(round_membw[i])
    for t in inlay_tests:
        if "bytes_per_token" in t:
            # Each round's rate against the bandwidth measured beside it, then the median.
            t["bytes_per_s"] = t["median_ts"] * t["bytes_per_token"]
            shares = [ts * t["bytes_per_token"] / b for ts, b in zip(t["samples_ts"], round_membw[i]) if b > 0]
            t["roofline_share"] = statistics.median(shares) if shares else None
            t["roofline_ts"] = model_membw / t["bytes_per_token"]
    report["models"].append({
        "path": path,
        "name": os.path.basename(path),
        "file_bytes": os.path.getsize(path),
        "membw_bytes_per_s": round_membw[i],  # per round
        "inlay": {"tests": inlay_tests, "peak_rss_bytes": inlay_rss, "load_s": load_s},
        "llama_cpp": {"tests": collect(llama_rounds), "peak_rss_bytes": llama_rss},
    })
with open(out, "w") as f:
    json.dump(report, f, indent=1)
    f.write("\n")
print(f"perf-compare: wrote {out}", file=sys.stderr)
EOF
