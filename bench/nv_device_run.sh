#!/bin/bash
# bench/nv_device_run.sh STAGE: what one device call does (run from the repository root there).
#   check: device facts + mma.sync peak, harness correctness, pytest (gpu + nvcc tests), compute-sanitizer
#   tma: the Hopper body's GPU tests, its memcheck, bench/gemm.py --quick
#   bench: bench/gemm.py (ckgen via the JIT vs cuBLAS vs Triton, fused vs eager / torch.compile)
# Expects the carried build cache .nvcache (bench/nv_prebuild.py) and bench/_build/libnvh.so.
set -u
STAGE=${1:-check}
OUT=${OUT:-/tmp/nvout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site CKGEN_CACHE_DIR=$PWD/.nvcache
python3 -m pip install -q --no-index --no-deps --target /tmp/site lark-1.3.1-py3-none-any.whl >/dev/null 2>&1
LIB=bench/_build/libnvh.so
if [ "$STAGE" = check ]; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/smi.txt"
  nvcc --version | tail -2
  python3 bench/nv_peak.py $LIB 2>&1 | tee "$OUT/peak.txt"
  python3 bench/nv_check.py --lib $LIB --json "$OUT/check.json" > "$OUT/check.txt" 2>&1; echo "nv_check rc $?"
  tail -3 "$OUT/check.txt"
  python3 -m pytest -q -p no:cacheprovider tests/runtime/test_nvidia_cuda.py tests/toolchain/test_nvidia_build.py \
    tests/targets/test_nvidia_targets.py > "$OUT/pytest.txt" 2>&1; echo "pytest rc $?"; tail -4 "$OUT/pytest.txt"
  python3 -c "from ckgen.cli import main; raise SystemExit(main(['run', 'bench/gemm_nv.ck', '--kernel', 'bf16_rr_t128_256_64_w24_s4', '--target', 'sm_90', '-m', '1000', '-n', '1100', '-k', '300']))" 2>&1 | tee "$OUT/ckgen_run.txt"
  export PYTORCH_NO_CUDA_MEMORY_CACHING=1
  timeout 200 compute-sanitizer --tool memcheck --leak-check no python3 bench/nv_check.py --lib $LIB --quick \
    > "$OUT/memcheck_harness.txt" 2>&1; echo "memcheck harness rc $?"; tail -2 "$OUT/memcheck_harness.txt"
  timeout 240 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest -q -p no:cacheprovider \
    tests/runtime/test_nvidia_cuda.py -k "pad0 or numpy or errors" \
    > "$OUT/memcheck_jit.txt" 2>&1; echo "memcheck jit rc $?"; tail -3 "$OUT/memcheck_jit.txt"
elif [ "$STAGE" = tma ]; then
  # the Hopper body: GPU tests of its kernels, memcheck of its edge shapes, then the quick benchmark
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  timeout 150 python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/runtime/test_nvidia_cuda.py \
    -k "hopper or wgmma or tma" > "$OUT/pytest_tma.txt" 2>&1; echo "pytest -m gpu (tma) rc $?"; tail -15 "$OUT/pytest_tma.txt"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest -q \
    -p no:cacheprovider -m gpu tests/runtime/test_nvidia_cuda.py -k "tma_edge_shapes and pad0" \
    > "$OUT/memcheck_tma.txt" 2>&1; echo "memcheck tma rc $?"; tail -3 "$OUT/memcheck_tma.txt"
  timeout 240 python3 bench/gemm.py --quick --json "$OUT/gemm_quick.json" > "$OUT/gemm_quick.txt" 2>&1
  echo "bench rc $?"; tail -22 "$OUT/gemm_quick.txt"
elif [ "$STAGE" = gpu ]; then
  # the final run: every GPU test, memcheck (JIT edge shapes of both bodies), ckgen run, the full benchmark
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$OUT/smi.txt"
  python3 -m pytest -q -p no:cacheprovider -m gpu tests/runtime/test_nvidia_cuda.py > "$OUT/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu rc $?"; tail -2 "$OUT/pytest_gpu.txt"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 240 compute-sanitizer --tool memcheck --leak-check no python3 -m pytest -q \
    -p no:cacheprovider -m gpu tests/runtime/test_nvidia_cuda.py -k "pad0 or numpy or errors" \
    > "$OUT/memcheck_jit.txt" 2>&1; echo "memcheck jit rc $?"; tail -2 "$OUT/memcheck_jit.txt"
  for shape in "-m 1000 -n 1104 -k 304" "-m 1000 -n 1100 -k 300"; do   # Hopper body; portable body (odd lds)
    python3 -c "import sys; from ckgen.cli import main; raise SystemExit(main(sys.argv[1:]))" run bench/gemm_nv.ck \
      --kernel bf16_rr_t128_256_64_w24_s4 --target sm_90 $shape 2>&1 | tee -a "$OUT/ckgen_run.txt"
  done
  timeout 300 python3 bench/gemm.py --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1; echo "bench rc $?"
  tail -34 "$OUT/gemm.txt"
else
  python3 bench/gemm.py --json "$OUT/gemm.json" 2>&1 | tee "$OUT/gemm.txt" | tail -32
fi
