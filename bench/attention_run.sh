#!/bin/bash
# bench/attention_run.sh STAGE: the attention forward on the GPU machine (run from the repository root there).
# Outputs go to $OUT (default /tmp/attnout). Each stage fits in one 10-minute device command.
#   build   nvcc the harness kernels (bench/attention_kernels.cu -> bench/_build/libattn*.so); skipped when
#           the libraries are newer than the sources (e.g. built on the CPU machine and carried)
#   check   build + numerics of every kernel vs a float64 reference and vs torch SDPA, then
#           compute-sanitizer memcheck (edge shapes, every kernel) and racecheck / synccheck (a few kernels)
#   bench   build + TFLOP/s vs torch SDPA flash and cuDNN on the cases of the issue
#   all     check then bench
set -u
STAGE=${1:-all}
OUT=${OUT:-/tmp/attnout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY="python3 bench/attention.py"

build() {
  local newest
  newest=$(find bench/attention_kernels.cu ckgen/ops/attention/device ckgen/include -newer bench/_build/libattn0.so \
           -type f 2>/dev/null | head -1)
  if [ -f bench/_build/libattn0.so ] && [ -z "$newest" ]; then
    echo "build: bench/_build is up to date"
  else
    $PY --build --jobs "$(nproc)" > "$OUT/build.txt" 2>&1; echo "build rc $?"; tail -30 "$OUT/build.txt"
  fi
}

check() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/smi.txt"
  timeout 280 $PY --check --json "$OUT/check.json" > "$OUT/check.txt" 2>&1; echo "check rc $?"
  grep -E "FAIL|checks passed" "$OUT/check.txt" | tail -20
  export PYTORCH_NO_CUDA_MEMORY_CACHING=1
  timeout 200 compute-sanitizer --tool memcheck --leak-check no $PY --memcheck > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc $?"; tail -3 "$OUT/memcheck.txt"
  timeout 120 compute-sanitizer --tool racecheck --racecheck-report hazard $PY --memcheck --quick \
    --kernels 'bf16_d128_causal_m128w4n64s2q$|f16_d128_causal_m64w4n64s3r_varlen|bf16_d256_causal' \
    > "$OUT/racecheck.txt" 2>&1
  echo "racecheck rc $?"; tail -3 "$OUT/racecheck.txt"
  timeout 120 compute-sanitizer --tool synccheck $PY --memcheck --quick --kernels 'bf16_d128_none_m128w8n64s2r' \
    > "$OUT/synccheck.txt" 2>&1
  echo "synccheck rc $?"; tail -3 "$OUT/synccheck.txt"
  unset PYTORCH_NO_CUDA_MEMORY_CACHING
}

bench() {
  timeout 500 $PY --bench --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1; echo "bench rc $?"
  tail -14 "$OUT/bench.txt"
}

build
case "$STAGE" in
  build) ;;
  check) check ;;
  bench) bench ;;
  all) check; bench ;;
  *) echo "unknown stage $STAGE (build | check | bench | all)"; exit 2 ;;
esac
