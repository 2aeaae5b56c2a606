#!/bin/bash
# bench/rowops_device_check.sh [build|check|bench|all]: the row ops' GPU run (from the repository root, on the
# NVIDIA machine). Uses bench/_build/librowops.so (built here by `bench/rowops_device_check.sh build` with
# nvcc, then carried with bench/_build/librowops.src.sha256, the hash of the sources it was built from); rebuilds
# it only when nvcc is present and the library is missing or its recorded sources hash differs from the
# checkout's (a copied tree's file times say nothing; a library carried without its hash file is used as is;
# ROWOPS_NO_REBUILD=1 uses the carried library in any case).
#   check: device facts, every configuration on edge shapes vs float64 (bench/rowops_bench.py --check), then
#          compute-sanitizer memcheck of the quick check of the staged and coverage configurations
#   bench: the shapes vs device copy, torch eager and torch.compile (bench/rowops_bench.py --bench)
#   all:   check then bench
# Output: $OUT (default /tmp/rowops_out): smi.txt, ptxas.txt, check.txt/json, memcheck.txt, bench.txt/json.
set -u
STAGE=${1:-all}
OUT=${OUT:-/tmp/rowops_out}
mkdir -p "$OUT"
LIB=bench/_build/librowops.so
SRCS="bench/rowops_kernels.cu bench/rowops_configs.h ckgen/ops/rowops/device/*.h ckgen/include/ckgen/*.h ckgen/include/ckgen/blocks/reduce.h"
build() {
  mkdir -p bench/_build
  nvcc -std=c++17 -O3 -shared -Xcompiler -fPIC,-fvisibility=hidden --expt-relaxed-constexpr --prec-div=false \
    -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -Ickgen/include -Ickgen/ops/rowops/device \
    bench/rowops_kernels.cu -o $LIB 2> bench/_build/librowops.ptxas.txt
  local rc=$?
  grep -E "error" bench/_build/librowops.ptxas.txt | head
  echo "nvcc rc $rc; spills:"; grep -B2 "spill" bench/_build/librowops.ptxas.txt | grep -E "Compiling|[1-9][0-9]* bytes spill" | grep -B1 -E "[1-9][0-9]* bytes spill" || echo "  none"
  return $rc
}
srchash() { cat $SRCS | sha256sum | cut -c1-16; }
HASHFILE=bench/_build/librowops.src.sha256
stale=0
if [ ! -f $LIB ]; then stale=1
elif [ -f $HASHFILE ] && [ "$(cat $HASHFILE)" != "$(srchash)" ]; then stale=1; echo "sources changed since $LIB was built"; fi
[ "${ROWOPS_NO_REBUILD:-0}" = 1 ] && [ -f $LIB ] && stale=0   # use the carried library whatever the hash says
if [ "$STAGE" = build ] || { [ $stale = 1 ] && command -v nvcc >/dev/null; }; then
  build || exit 1
  srchash > $HASHFILE
fi
[ "$STAGE" = build ] && exit 0
[ -f $LIB ] || { echo "no $LIB and no nvcc"; exit 1; }
echo "library $LIB, sources $(cat $HASHFILE 2>/dev/null || echo '(no hash file)'), checkout $(srchash)"
cp bench/_build/librowops.ptxas.txt "$OUT/ptxas.txt" 2>/dev/null
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.total --format=csv,noheader | tee "$OUT/smi.txt"
if [ "$STAGE" = check ] || [ "$STAGE" = all ]; then
  timeout 300 python3 bench/rowops_bench.py --lib $LIB --check --json "$OUT/check.json" > "$OUT/check.txt" 2>&1
  echo "check rc $?"; tail -3 "$OUT/check.txt"; grep FAIL "$OUT/check.txt" | head -20
  # memcheck: the staged (cp.async ring) and coverage configurations (the direct path is every staged kernel's
  # fallback for misaligned tensors, which the quick shapes include)
  timeout 300 compute-sanitizer --tool memcheck --leak-check no python3 bench/rowops_bench.py --lib $LIB --check --quick \
    --only '(s[1-4]$|^cov_)' > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc $?"; grep -E "ERROR SUMMARY|configurations pass" "$OUT/memcheck.txt" | tail -2
fi
if [ "$STAGE" = bench ] || [ "$STAGE" = all ]; then
  timeout 540 python3 bench/rowops_bench.py --lib $LIB --bench --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
  echo "bench rc $?"; grep -vE "^      " "$OUT/bench.txt" | tail -24
fi
