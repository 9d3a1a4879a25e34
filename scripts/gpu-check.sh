#!/usr/bin/env bash
# The prepared GPU run: every GPU test and the GPU benchmark in one command on a machine
# with an NVIDIA GPU, every failure reported with its numbers, and a short table.
#
#   scripts/gpu-check.sh prepare           here (toolkit, no GPU needed): builds build-gpu/
#                                          (Release, kernels for sm_90, portable x86-64-v3
#                                          host code) and bundles what runs there into
#                                          .gpu-bundle/ (git-ignored): the test programs,
#                                          the inlay tool and libinlay, their non-system
#                                          shared libraries and a subset of ../shared/testdata.
#   scripts/gpu-check.sh run [--dry-run]   there (the device tool, with carry [".gpu-bundle"]):
#                                          runs it all; results under $OUT (else
#                                          .gpu-bundle/out; the bundle unpacks to
#                                          /tmp): gpu-check.md (the table),
#                                          nvidia-smi.txt and logs.tar.gz (one log per
#                                          step, bench_*.json, cuda_peaks.json,
#                                          profile_*.md). GPU_CHECK_BUDGET (seconds,
#                                          default 450) bounds the steps; give the device
#                                          tool a timeout ~60 s above it.
#                                          --dry-run: the same here, without a GPU (the GPU
#                                          tests must then skip, everything else pass).
#
# The GPU machine has the CUDA toolkit (cuBLAS, NVRTC), CMake and Python but none of
# inlay's other dependencies and no package registry, so the programs are built here and
# travel with the libraries they need (the working tree plus the bundle stay under the
# device tool's 64 MiB). A run ends within ~8 minutes: each step has a time limit and the
# steps left when the budget is spent are reported as not run.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
carried=.gpu-bundle          # what travels: one compressed archive of the bundle
bundle=build-gpu/bundle      # where prepare lays the bundle out (and run, here, unpacks it)
mode=${1:-}

prepare() {
  set -e
  local build=build-gpu
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DINLAY_CUDA=ON -DINLAY_CUDA_ARCHS=90 \
    -DINLAY_NATIVE=OFF -DCMAKE_C_FLAGS=-march=x86-64-v3 -DCMAKE_CXX_FLAGS=-march=x86-64-v3 \
    -DINLAY_BENCH=OFF -DINLAY_WERROR=ON >/dev/null
  cmake --build "$build" -j"$(nproc)"
  rm -rf "$bundle"
  mkdir -p "$bundle/build/tests" "$bundle/build/tools" "$bundle/build/capi" "$bundle/lib" "$bundle/shared/testdata"
  # The programs the run uses (the CPU-only suites stay behind: CI runs them).
  local t
  for t in kernels/test_kernels_host kernels/test_kernels_gpu test_cuda_host test_backend_cuda test_model \
           test_runtime test_cli; do
    cp "$build/tests/$t" "$bundle/build/tests/"
  done
  cp "$build"/tests/test_capi_* "$bundle/build/tests/"
  cp "$build/tools/inlay" "$build/tools/inlay-cuda-peaks" "$bundle/build/tools/"
  # ptxas's reports, which test_kernels_host reads (INLAY_PTXAS_REPORT_DIR in run()).
  mkdir -p "$bundle/build/kernels/ptxas"
  cp "$build"/kernels/ptxas/*.txt "$bundle/build/kernels/ptxas/"
  cp -P "$build"/capi/libinlay.so* "$bundle/build/capi/"
  if [ -d "$build/examples" ]; then
    mkdir -p "$bundle/build/examples"
    find "$build/examples" -maxdepth 1 -type f -perm -u+x -exec cp {} "$bundle/build/examples/" \;
  fi
  find "$bundle/build" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null || true
  # Shared libraries that are neither glibc's nor the CUDA toolkit's (which is there).
  find "$bundle/build" -type f -perm -u+x -print0 | xargs -0 ldd 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
    grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' | grep -v -E '^/usr/local/cuda' |
    while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
  # Test data: the small models and their references (skips say what is absent).
  local td=../shared/testdata
  for f in README.md models/stories260K.gguf models/stories260K.greedy.txt models/llama-2-tiny-random.gguf \
           models/stories15M-q8_0.gguf \
           chat; do
    [ -e "$td/$f" ] && mkdir -p "$bundle/shared/testdata/$(dirname "$f")" && cp -r "$td/$f" "$bundle/shared/testdata/$f"
  done
  if [ -d "$td/llamacpp-refs" ]; then
    mkdir -p "$bundle/shared/testdata/llamacpp-refs"
    # All but llama's f32 model (6 MiB; qwen3's f32 checks float weights).
    find "$td/llamacpp-refs" -maxdepth 1 -type f ! -name 'llama-r256-f32.gguf' \
      -exec cp {} "$bundle/shared/testdata/llamacpp-refs/" \;
  fi
  {
    echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
    echo "prepared $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(nvcc --version | tail -1)"
    echo "build dir $root/$build"
  } >"$bundle/manifest.txt"
  rm -rf "$carried"
  mkdir -p "$carried"
  tar -C "$bundle" -cJf "$carried/bundle.tar.xz" .
  local bytes tree
  bytes=$(du -sb "$carried" | cut -f1)
  tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
  echo "gpu-check: bundle $((bytes / 1048576)) MiB + working tree $((tree / 1048576)) MiB (the device tool takes 64 MiB)"
  if [ $((bytes + tree)) -gt $((62 * 1048576)) ]; then
    echo "gpu-check: too large to travel; drop test data from the bundle" >&2
    exit 1
  fi
}

# run_step NAME SECONDS COMMAND...: runs one step, logs it, appends its row to the table.
run_step() {
  local name=$1 limit=$2
  shift 2
  local now=$SECONDS
  if [ $((now - start)) -ge "$budget" ]; then
    echo "| $name | not run | 0 | the run's ${budget} s budget was spent |" >>"$table"
    return
  fi
  local left=$((budget - (now - start)))
  [ "$limit" -gt "$left" ] && limit=$left
  local log="$out/$name.log" rc
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local took=$((SECONDS - now)) result detail=""
  case $rc in
    0) result=pass ;;
    77) result=skip; detail=$(grep -m1 -i -E 'skipped|no cuda device' "$log" | tr '|' '/' | cut -c1-160) ;;
    124|137) result=FAIL; detail="timed out after ${limit} s" ;;
    *) result=FAIL
       # Catch2: the first failed check with its expansion; C tests: their CHECK lines.
       detail=$(grep -m3 -E 'FAILED|failed|with expansion|CHECK failed|error' "$log" | tr '\n|' '  ' | cut -c1-220) ;;
  esac
  [ "$result" = FAIL ] && failures=$((failures + 1))
  echo "| $name | $result | $took | $detail |" >>"$table"
  echo "gpu-check: $name: $result (${took} s)"
}

run() {
  local dry=0
  [ "${1:-}" = "--dry-run" ] && dry=1
  if [ ! -f "$carried/bundle.tar.xz" ]; then
    echo "gpu-check: no $carried/bundle.tar.xz here; run 'scripts/gpu-check.sh prepare' first" >&2
    exit 2
  fi
  bundle=/tmp/inlay-gpu-bundle
  rm -rf "$bundle"
  mkdir -p "$bundle"
  tar -C "$bundle" -xJf "$carried/bundle.tar.xz"
  # The device tool brings back at most 8 files from $OUT: the logs go to a folder that is
  # packed into one archive at the end, beside the table and nvidia-smi's report.
  final=${OUT:-$root/$carried/out}
  out=/tmp/inlay-gpu-logs
  rm -rf "$out"
  mkdir -p "$out" "$final"
  table="$out/gpu-check.md"
  start=$SECONDS
  budget=${GPU_CHECK_BUDGET:-450}
  failures=0
  export LD_LIBRARY_PATH="$bundle/lib:$bundle/build/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export INLAY_SHARED_DIR="$bundle/shared"
  export INLAY_SOURCE_DIR="$root"
  export INLAY_BINARY_DIR="$bundle/build"
  export INLAY_PTXAS_REPORT_DIR="$bundle/build/kernels/ptxas"
  [ $dry -eq 0 ] && export INLAY_TEST_EXPECT_GPU=1
  # C tests write scratch files under the build directory they were compiled in.
  mkdir -p "$(sed -n 's/^build dir //p' "$bundle/manifest.txt")" 2>/dev/null || true
  local t="$bundle/build/tests"
  {
    echo "# gpu-check $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    sed 's/^/    /' "$bundle/manifest.txt"
    echo
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | sed 's/^/    GPU: /'
    else
      echo "    GPU: none (nvidia-smi absent)"
    fi
    [ $dry -eq 1 ] && echo "    DRY RUN: no GPU expected; GPU tests must skip"
    echo
    echo "| step | result | seconds | first failure or skip reason |"
    echo "| --- | --- | --- | --- |"
  } >"$table"
  command -v nvidia-smi >/dev/null && nvidia-smi >"$out/nvidia-smi.txt" 2>&1
  # The GPU's own tests first: the kernels alone, the backend's host logic, every op of
  # the backend against float64.
  run_step kernels_host 120 "$t/test_kernels_host"
  run_step kernels_gpu 120 "$t/test_kernels_gpu"
  run_step cuda_host 60 "$t/test_cuda_host"
  run_step backend_cuda 120 "$t/test_backend_cuda"
  # Whole models on the device: device auto takes the GPU wherever the backend has the
  # kernels, so these suites compare CUDA against float64 references, llama.cpp's logits
  # and the engine-free reference, each within the backend's contract.
  run_step capi_device 60 "$t/test_capi_device"
  run_step model 180 "$t/test_model"
  run_step runtime 180 "$t/test_runtime"
  # On the device the engine pipelines its decode steps (runtime/pipeline.cpp); the same
  # suite without, so that a fault of the pipeline shows apart from the rest.
  run_step runtime_unpipelined 180 env INLAY_PIPELINING=never INLAY_TEST_SCRATCH_TAG=unpipelined "$t/test_runtime"
  for c in "$t"/test_capi_*; do
    [ "$(basename "$c")" = test_capi_device ] && continue
    run_step "$(basename "$c" | sed 's/^test_//')" 60 "$c"
  done
  run_step cli 120 "$t/test_cli"
  run_step generate_cuda 30 "$bundle/build/tools/inlay" generate -m models/default-q8_0.gguf -p "You will" -n 16 \
    --device "$([ $dry -eq 1 ] && echo cpu || echo cuda)" --json
  # The ceilings the benchmark is judged against, measured now: read bandwidth and cuBLAS
  # GEMM rates (tools/cuda_peaks).
  run_step cuda_peaks 60 "$bundle/build/tools/inlay-cuda-peaks" --json
  [ -s "$out/cuda_peaks.log" ] && grep '^{' "$out/cuda_peaks.log" >"$out/cuda_peaks.json"
  # The GPU benchmark: synthetic weights made on the device from a shape name.
  # (A dry run benchmarks the tiny shape on the CPU: the same code, in seconds.)
  local bdev=cuda
  [ $dry -eq 1 ] && bdev=cpu
  if "$bundle/build/tools/inlay" bench --help 2>/dev/null | grep -q -- --synthetic; then
    local shape=llama3-8b
    [ $dry -eq 1 ] && shape=tiny
    for dtype in f16 q8_0 q4_k; do
      run_step "bench_${shape}_$dtype" 90 "$bundle/build/tools/inlay" bench --synthetic "$shape" --dtype "$dtype" \
        --device "$bdev" -p 2048 -n 64 --batch 64 -r 3 --json
      [ -s "$out/bench_${shape}_$dtype.log" ] && grep '^{' "$out/bench_${shape}_$dtype.log" >"$out/bench_${shape}_$dtype.json"
    done
    # The same decode without CUDA graphs (one launch per kernel): what the graphs buy.
    run_step "bench_${shape}_q4_k_nographs" 90 env INLAY_CUDA_GRAPHS=0 "$bundle/build/tools/inlay" bench \
      --synthetic "$shape" --dtype q4_k --device "$bdev" -p 512 -n 64 --batch 1 -r 3 --json
    [ -s "$out/bench_${shape}_q4_k_nographs.log" ] &&
      grep '^{' "$out/bench_${shape}_q4_k_nographs.log" >"$out/bench_${shape}_q4_k_nographs.json"
    local qshape=qwen3-8b
    [ $dry -eq 1 ] && qshape=tiny
    run_step "bench_${qshape}_q1_0" 90 "$bundle/build/tools/inlay" bench --synthetic "$qshape" --dtype q1_0 \
      --device "$bdev" -p 512 -n 64 --batch 1 -r 3 --json
    [ -s "$out/bench_${qshape}_q1_0.log" ] && grep '^{' "$out/bench_${qshape}_q1_0.log" >"$out/bench_${qshape}_q1_0.json"
  else
    echo "| bench | not built | 0 | inlay bench --synthetic does not exist yet |" >>"$table"
  fi
  # Speculative decoding on the device: prompt lookup on a real model and a repetitive
  # prompt, adaptive and with 4 proposals forced (what verifying a 5-token chunk costs
  # against a decode step there). The tool checks that both decodings give the same tokens.
  local story=$bundle/shared/testdata/models/stories15M-q8_0.gguf
  local text="The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog sat on the log. The cat sat"
  if [ -f "$story" ]; then
    # Decode through the engine (one session, then 16 at once) with pipelined steps (the
    # default on the device) and without: what planning step N+1 during step N buys.
    local pipe
    for pipe in auto never; do
      run_step "bench_engine_stories15M_pipe_$pipe" 60 env INLAY_PIPELINING=$pipe "$bundle/build/tools/inlay" bench \
        -m "$story" --device "$bdev" -p 16 -n 256 -r 3
      run_step "bench_engine16_stories15M_pipe_$pipe" 60 env INLAY_PIPELINING=$pipe "$bundle/build/tools/inlay" bench \
        -m "$story" --device "$bdev" --concurrency 16 -n 128 -r 3
    done
    run_step bench_lookup_stories15M 60 "$bundle/build/tools/inlay" bench -m "$story" --device "$bdev" --lookup \
      --text "$text" -n 128 -r 3
    run_step bench_lookup4_stories15M 60 "$bundle/build/tools/inlay" bench -m "$story" --device "$bdev" --lookup \
      --text "$text" --n-draft 4 --n-draft-min 4 -n 128 -r 3
    # A draft model on the device: the file drafting for itself (every proposal must be
    # kept; the tool checks the tokens against plain decoding), adaptive and forced.
    run_step bench_draft_self_stories15M 60 "$bundle/build/tools/inlay" bench -m "$story" --device "$bdev" \
      --draft "$story" -n 128 -r 3
    run_step bench_draft4_self_stories15M 60 "$bundle/build/tools/inlay" bench -m "$story" --device "$bdev" \
      --draft "$story" --n-draft 4 --n-draft-min 4 -n 128 -r 3
  fi
  # Where decode time goes: every kernel's duration under Nsight Compute (one metric, the
  # first 1500 launches: an 8-token prompt on the GEMV path and the first decode steps),
  # summed per kernel by scripts/ncu-summary.py into profile_*.md.
  local ncu
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)
  if [ $dry -eq 0 ] && [ -n "$ncu" ]; then
    local pshape pdtype
    for pshape in qwen3-8b:q1_0 llama3-8b:q4_k; do
      pdtype=${pshape#*:} pshape=${pshape%%:*}
      run_step "profile_${pshape}_$pdtype" 120 "$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
        --print-units base --launch-count 1500 "$bundle/build/tools/inlay" bench --synthetic "$pshape" \
        --dtype "$pdtype" --device cuda -p 8 -n 8 --batch 1 -r 1
      python3 "$root/scripts/ncu-summary.py" "$out/profile_${pshape}_$pdtype.log" >"$out/profile_${pshape}_$pdtype.md" 2>&1
    done
  fi
  # Bad memory accesses that the numbers do not show: the kernels' tests under memcheck,
  # when the budget has room and the tool is there.
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
  if [ $dry -eq 0 ] && [ -n "$sanitizer" ]; then
    run_step memcheck_kernels 120 "$sanitizer" --tool memcheck --leak-check full --error-exitcode 1 "$t/test_kernels_gpu"
  fi
  echo >>"$table"
  echo "$failures failing step(s); $((SECONDS - start)) s" >>"$table"
  cp "$table" "$final/"
  [ -f "$out/nvidia-smi.txt" ] && mv "$out/nvidia-smi.txt" "$final/"
  tar -C "$out" -czf "$final/logs.tar.gz" .
  cat "$table"
  [ "$failures" -eq 0 ]
}

case "$mode" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  *) echo "usage: $0 prepare | run [--dry-run]" >&2; exit 2 ;;
esac
