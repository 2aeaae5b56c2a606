#!/bin/bash
# bench/debug/dependent_launch_ab.sh: the decode kernel's split combine launched as a programmatic dependent
# (CKGEN_LAUNCH_DEPENDENT, platform_cuda.h) against the same kernels launched in plain stream order, on one device
# in one call: bench/decode.py (every batch-1 case; with AB_QUICK=1 its --quick cases first) with the dependent
# launch (A), then with cuda_host::dependent_launch_supported() edited to return false in this copy of the tree
# (B: the kernels rebuilt here, nv_prebuild -j 16), then (AB_REPEAT=1) A again, from the cache. Device only; run from the repository root after
# `tar xzf .carry/bundle.tgz` (the A kernels prebuilt: PREBUILD below). Writes $OUT/decode_{a,b,a2}_b1.txt (and
# _quick.txt).
set -u
OUT=${OUT:-/tmp/devout}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site CKGEN_CACHE_DIR=$PWD/.nvcache
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
KERNELS='d128_(p16_)?m16w4n64s2k$|d128_m32w2n64s2$'
PREBUILD='^dec_bf16_d128_(p16_)?m16w4n64s2k$|^dec_bf16_d128_m32w2n64s2$'
HDR=ckgen/include/ckgen/platform_cuda.h
run() {  # run LABEL
  if [ "${AB_QUICK:-0}" = 1 ]; then
    timeout 150 python3 bench/decode.py --quick --kernels "$KERNELS" > "$OUT/decode_$1_quick.txt" 2>&1
  fi
  timeout 150 python3 bench/decode.py --only 'b1 s' --kernels "$KERNELS" > "$OUT/decode_$1_b1.txt" 2>&1
  echo "== $1"; grep -hE "FAIL|differs|^b[0-9]" "$OUT"/decode_"$1"_*.txt | cut -c1-110
}
run a
cp "$HDR" /tmp/platform_cuda.h.orig
sed -i 's/  return known\[dev\] == 2;/  return false;/' "$HDR"
! grep -q "return known\[dev\] == 2;" "$HDR" || { echo "the edit did not apply"; exit 1; }
timeout 240 python3 bench/nv_prebuild.py -j 16 --only "$PREBUILD" > "$OUT/prebuild_b.txt" 2>&1
echo "prebuild (no dependent launch) rc $?"
run b
cp /tmp/platform_cuda.h.orig "$HDR"
if [ "${AB_REPEAT:-0}" = 1 ]; then run a2; fi
