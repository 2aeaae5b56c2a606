#!/bin/bash
# bench/nv_device_run.sh: everything one device call does (run from the repository root there).
#   MODE=all (default): peak, correctness, compute-sanitizer, benchmark. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/nvout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
LIB=bench/_build/libnvh.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/smi.txt"
if ! python3 -c "import ctypes; ctypes.CDLL('$LIB')" 2>/dev/null; then
  echo "rebuilding $LIB on the device"
  mkdir -p bench/_build
  for p in 0 1 2 3; do
    nvcc -std=c++17 -O3 -gencode=arch=compute_90,code=sm_90 -I ckgen/include -I bench -Xcompiler -fPIC \
      -DNVH_PART=$p -c -o bench/_build/p$p.o bench/nv_kernels.cu &
  done
  wait
  nvcc -shared -o $LIB bench/_build/p?.o
fi
cuobjdump --dump-resource-usage $LIB > "$OUT/resource.txt" 2>&1
cuobjdump -sass $LIB | grep -c HMMA > "$OUT/hmma_count.txt" 2>&1
python3 bench/nv_peak.py $LIB 2>&1 | tee "$OUT/peak.txt"
python3 bench/nv_check.py --lib $LIB --json "$OUT/check.json" 2>&1 | tee "$OUT/check.txt" | tail -40
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 200 compute-sanitizer --tool memcheck --leak-check no \
  python3 bench/nv_check.py --lib $LIB --quick > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc $?"; tail -5 "$OUT/memcheck.txt"
python3 bench/gemm.py --lib $LIB --json "$OUT/gemm.json" 2>&1 | tee "$OUT/gemm.txt" | tail -30
