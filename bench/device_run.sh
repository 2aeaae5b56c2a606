#!/bin/bash
# bench/device_run.sh STAGE...: what one call on the lent GPU machine does (run from the repository root there).
#
# Carry: .nvcache (the build cache filled here by `CKGEN_CACHE_DIR=.nvcache python3 bench/nv_prebuild.py`, so that
# nothing is compiled there when the nvcc versions match; packed whole by bench/carry_bundle.sh: an entry missing
# a file, e.g. its PTX, fails the cache's verification and is rebuilt there) and .whl (lark's wheel: the device
# image lacks it). The last line says how many libraries were built on the device anyway (0 expected).
# Every stage writes its full log under $OUT and prints a short summary; stages run in the order given:
#   info      device facts (nvidia-smi: clocks now and at most, the power limits, the temperature; nvcc)
#   gpu       every GPU test (pytest -m gpu), then `ckgen run` on both GEMM bodies
#   memcheck  compute-sanitizer memcheck over the GPU tests' edge shapes
#   gemm      bench/gemm.py --quick (4096^3, 8192^3) ; gemm-full: the whole GEMM table
#   cluster   the Hopper body's clusters (cluster = 2, TMA multicast of B): their GPU tests (-k c2 in
#             tests/runtime/test_nvidia_{cuda,gemm_fused}.py), memcheck over their edge shapes, then
#             bench/gemm_cluster.py $CLUSTER_ARGS (cluster 1 vs 2 vs cuBLAS, graph-timed; e.g. --quick, or
#             --residual-ab: the plain vs the residual 128x256 kernel and mm vs addmm, one case per down projection);
#             cluster-probe: ncu (launch statistics, speed of light, occupancy) on one launch each of the 128x256
#             and 128x128 pairs at the first decision shape
#   fp8       issue 26: the fp8 GEMM GPU tests (tests/runtime/test_nvidia_fp8{,_hopper}.py), then bench/fp8.py --quick
#             (per-tensor, per-row/col and block(128) scaled fp8 vs torch._scaled_mm, CUDA-graph replays); fp8-full:
#             the whole table; fp8-bench: the whole table without the tests (FP8_BENCH_ARGS adds options to either,
#             e.g. --only _h); fp8-dispatch: bench/fp8.py --dispatch $FP8_DISPATCH_ARGS (the untuned fp8 dispatchers of
#             bench/fp8_dispatch_nv.ck on the nn.Linear shapes and on Qwen2-7B's, bench/shapes/qwen2-7b.txt; --quick:
#             every third shape; --members: every member timed, the dispatcher's pick against the fastest);
#             fp8-tune: ckgen tune of those three families on bench/shapes/mistral-7b.txt ($OUT/fp8_tune.jsonl, on top
#             of $FP8_DB when given: only what it lacks is measured), then the same bench through the dispatchers
#             built from it (--tuning): the nn.Linear shapes are the tuning set's N x K, Qwen2-7B's never tuned
#   bmm       bench/bmm.py (strided-batched GEMM vs torch.bmm, interleaved rounds), with the SM clock and power sampled
#             by nvidia-smi every 200 ms ($OUT/bmm_clocks.csv, summarised)
#   dispatch  issue 13: ckgen tune of the family of bench/dispatch_nv.ck on bench/shapes/mistral-7b.txt (DB: $OUT/tune.jsonl;
#             bench/debug/streamk_efficiency.py on it: stream-K against the tile schedule),
#             ckgen compile --tuning (the dispatcher ckgen_lin; only its small host file is compiled here), then
#             bench/dispatch.py: the dispatcher vs cuBLAS on the tuned shapes and on five models never tuned (bench/shapes/);
#             DISPATCH_DB=path skips the tuning and builds from that database (with DISPATCH_RESUME=1 the tuning runs
#             on top of it: only members and shapes it lacks for this device are measured), DISPATCH_ARGS adds options
#             (e.g. --quick)
#   sched     issue 13's GPU tests only (tests/runtime/test_nvidia_schedules.py), then memcheck over them
#   attention the attention GPU tests (tests/runtime/test_nvidia_attention.py), `ckgen run` of one kernel, then
#             bench/attention.py (numerics, then TFLOP/s vs SDPA flash and cuDNN on the issue's cases)
#   attention-memcheck  compute-sanitizer memcheck over the attention GPU tests' edge shapes
#   decode    issue 27: the decode GPU tests (tests/runtime/test_nvidia_decode.py), memcheck over their edge shapes, then
#             bench/decode.py (numerics, then % of the copy bandwidth and ratios to SDPA flash / cuDNN, contiguous and
#             paged; DECODE_BENCH_ARGS adds options, e.g. --quick or --splits 1,4,16); decode-bench: bench/decode.py
#             alone (e.g. DECODE_BENCH_ARGS='--quick --prefill --only q --kernels pre_': the chunked-prefill table)
#   decode-splits  bench/debug/decode_splits.py $DECODE_SPLITS_ARGS (device time by split count, full length and one
#             tile; e.g. --kernels 'm16w4n64s2k$' --case 1,8192,32,1 --splits 8,16,32,64,128)
#   attention-hopper  the attention GPU tests, `ckgen run` of the Hopper body (TMA + wgmma), then bench/attention.py on
#             the Hopper kernels and the planned mma.sync ones only (ATTN_BENCH_KERNELS, a regex, overrides)
#   attention-hopper-memcheck  compute-sanitizer memcheck over the Hopper body's GPU tests (aligned shapes)
#   (CUPTI, torch's profiler, does not start under compute-sanitizer: the memcheck stages leave out the tests that only
#   check which entry ran, *_runs_wh*, and set CKGEN_TEST_NO_PROFILER=1, under which tests/runtime/gpu_helpers.py's
#   launched() runs its function unprofiled and the tests that check numbers too skip their entry checks)
#   tests     the GPU tests named in $TESTS (paths, -k ...); tests-memcheck: the same under compute-sanitizer memcheck
#             (its -k is $TESTS_K, default "not runs_wh")
#   graph-tune  ckgen tune of bench/dispatch_nv.ck's family lin on GRAPH_TUNE_SHAPES (default: one tuned shape,
#             16x4096x4096, and four held-out ones where the untuned dispatcher lost most to cuBLAS on the H100,
#             bench/runs/2026-12-07g_h100_dispatch_dense2.json) twice, --timing events then --timing graph (each
#             member's float64 check and time), then bench/debug/timing_ab.py: each shape's pick and member times
#             side by side, and against that earlier run's cuBLAS time and pick (is the loss the pick or the kernels?)
#   prebuild  bench/nv_prebuild.py -j 16 --only "$PREBUILD" (default: everything it knows)
#   small-m   issue 23: bench/debug/small_m_ab.py $SMALL_M_ARGS (the dispatcher's small-M members, the same tiles with
#             clusters of two, and cuBLAS, graph-timed with B read from HBM, on the held-out shapes where the
#             dispatcher lost most; prebuild small_m_nv first)
#   skinny    bench/skinny_probe.py (built there with nvcc): a GEMM body without matrix instructions at M = 1..16,
#             bf16 and e4m3 against torch.matmul / torch._scaled_mm and a read-only pass over W (an experiment), with
#             ckgen's vector body (instr = none, bench/skinny_nv.ck: prebuild skinny first) beside each variant
#   launch-floor bench/launch_floor.cu: host time of one empty-kernel launch in C++ (runtime <<<>>> and driver cuLaunchKernel)
#   benches   bench/gemm_fused.py, bench/fp8.py --only _h, bench/quant.py --quick, bench/moe_layer.py (no GPU tests)
#   model     issue 28: bench/model.py, examples/llama_layer.py's layer (Llama-3-8B and Qwen2.5-7B widths) against torch
#             eager and torch.compile, graph-timed, with the per-step breakdown (prebuild them first: stage prebuild);
#             MODEL_ARGS adds options, e.g. --fold-norms, --configs llama3-8b or
#             --cluster-ab (the layer with bench/layer_cluster_nv.ck's cluster = 2 projections beside it)
#   streamk-eff  ckgen tune of bench/debug/streamk_nv.ck (the 128x256 and 128x128 tiles, tile schedule and stream-K)
#             on the Mistral-7B shapes of M = 512, 2048, 8192, then bench/debug/streamk_efficiency.py on its database
#             (SCHEDULE_EFFICIENCY of ckgen/ops/gemm/cost_model.py; prebuild streamk_nv first)
#   streamk-tail  the same tuning on bench/debug/streamk_tail_shapes.txt (stream-K splitting the last tiles after
#             whole waves, 128x256 / 128x192 / 128x128; prebuild streamk_nv first), or on $STREAMK_SHAPES (e.g.
#             bench/debug/streamk_parts_shapes.txt: the tail by its part count and by K)
#   layer-clocks  issue 28: bench/debug/layer_clocks.py alone (ckgen's two layers, torch.compile's and eager's under
#             sustained replay: time, SM clock, power and energy per layer), then Llama at 1x2048 with graphs of
#             three layers (--inner 3, as bench/model.py captures them)
#   layer-gemms  issue 28: bench/debug/layer_gemm_ab.py --members for both configurations at LAYER_GEMM_SHAPES
#             (default 1x2048): each projection's family call, its chosen member, every other member and torch, on
#             the layer's own data (e.g. Qwen2.5-7B's qkv with bias: 0.143 ms against eager's 0.097 at 2048 tokens)
#   layer-prefix  issue 28: bench/debug/layer_prefix.py (every prefix of four layers as one graph beside each step
#             alone: where a composed layer's time exceeds its steps'); prebuild llama first. (The stage layer-probe
#             of the 2026-12-06 logs was layer_clocks.py, then this: now layer-clocks layer-prefix)
#   layer     issue 22: bench/layer.py, a Llama-3-8B decoder layer from the Python callables against the same kernels
#             through their raw C entries (wall time per layer), and the callables' layer as one CUDA graph
#   elementwise  issue 28: the element-wise op's GPU tests (tests/runtime/test_nvidia_elementwise.py), then
#             bench/elementwise.py: % of copy, x torch eager and x torch.compile, every side graph-timed
#   quant     issue 26 item 4: the quantizing row ops' / element-wise GPU tests (tests/runtime/test_nvidia_quant.py:
#             fp8 y with per-token and per-1x128-group scales against torch), then bench/quant.py: bandwidth (bytes read
#             + written) against a copy of the same bytes and x torch eager's quantizer, graph-timed (QUANT_BENCH_ARGS
#             adds options, e.g. --quick)
#   rowops    the row ops' GPU tests (tests/runtime/test_nvidia_rowops.py), `ckgen run` on two of them, then
#             bench/rowops.py --quick: softmax / layer norm / RMS norm / add + RMS norm at open models' widths vs
#             copy, torch eager, torch.compile, all by CUDA-graph replay (ROWOPS_BENCH_ARGS adds options, e.g.
#             --no-compile --candidates). Its planned kernels are one library of about 200 (bench/rowops_widths_nv.ck,
#             built as one job: about 5 minutes on the device when not prebuilt; a PREBUILD regex must match rowops_widths)
#   rowops-widths  bench/rowops.py on the widths of bench/shapes/hidden_sizes.txt of the kinds ROWOPS_KINDS (default
#             hidden; also intermediate, vocab, decode, comma-separated), part ROWOPS_PART (default 1/1: K/N, every
#             N-th shape from the K-th) ($OUT/rowops_widths.txt and .json); each run must fit one 10-minute call.
#             ROWOPS_WIDTHS (W,W,...): those widths instead (bench/rowops.py --widths: models not in the shapes file;
#             prebuild them here with the same ROWOPS_WIDTHS, or they are built on the device)
#   rowops-memcheck  compute-sanitizer memcheck over the row ops' edge shapes, in place, numpy and errors
#   rowops-split  split rows (vocabulary widths): tests/runtime/test_nvidia_rowops_split.py (clusters and the
#             workspace path), then memcheck over its float64 test
#   rowops-split-bench  bench/rowops.py --kinds vocab --candidates --no-compile twice: with clusters
#             ($OUT/rowops_split.txt) and CKGEN_ROWOPS_CLUSTERS=0, the workspace exchange ($OUT/rowops_split_ws.txt)
#   split-clusters  bench/debug/split_clusters.py: split rows timed at every cluster size a row takes
#             (CKGEN_ROWOPS_CLUSTERS=S), public widths then held-out ones (bench/debug/split_heldout_nv.ck);
#             SPLIT_CLUSTERS_ARGS is added to both ($OUT/split_clusters.txt)
#   probe     bench/probe.py under ncu (hardware counters, --clock-control none): the kernels torch.bmm runs, then
#             time, DRAM / L2 / L1 throughput and hit rates of one launch of PROBE_BMM (default: the 128x256 bmm kernel
#             at 64x1024x1024x128) and torch.bmm there, and of PROBE_ROWOPS (default: layer norm and RMS norm,
#             4096x32768, the 512x2 row-cache kernels) and of PROBE_GEMM (default none: M x N x K:member of
#             bench/dispatch_nv.ck[:kernel regex], or M x N x K:torch:regex for torch.mm); an empty PROBE_BMM /
#             PROBE_ROWOPS skips those
#   carveout  bench/carveout_probe.cu (built there with nvcc): the row-cache layer norm / RMS norm / softmax at 4096x32768
#             with the shared-memory carveout unset and set (does a larger L1 keep weight and bias out of the L2?)
#   overhead  issue 22: the prepared-call GPU tests (tests/runtime/test_nvidia_prepared.py, test_torch_ops.py;
#             a RuntimeWarning, e.g. fastcall.cpp failing to build, is an error), then bench/overhead.py: host time per
#             call of one kernel of every op and of a dispatcher on a cached signature beside a torch op of the same
#             size, and device time of both by CUDA-graph replay ($OUT/overhead.json); then bench/overhead_profile.py
#   moe       issue 24: the MoE GPU tests (tests/runtime/test_nvidia_moe.py), memcheck over them (but the CUDA-graph
#             one), then bench/moe.py --quick (grouped GEMM vs torch._grouped_mm); moe-bench: that alone; moe-full: every
#             bench/moe.py case;
#             moe-before: bench/moe.py --quick with the ckgen/, grammar/ and templates/ of $BEFORE_TREE (default
#             .carry/main: a copy of another commit's, carried with its kernels prebuilt into .nvcache by
#             `PYTHONPATH=.carry/main bench/nv_prebuild.py`), for a before / after on the same card;
#             moe-fp8: bench/moe.py --fp8 --quick (scaled e4m3 grouped GEMM vs torch._scaled_grouped_mm);
#             moe-layer: bench/moe_layer.py (the whole layer vs torch layers on _grouped_mm and a per-expert loop)
#   weights-probe bench/rowops_weights_probe.cu (built there): layer norm at intermediate widths as planned, beside
#             variants of the same tile (the next weight vector asked for ahead, the staged ring of one row group)
#             and a diagnostic (no bias), graph-timed
#   persistent bench/rowops_persistent_probe.cu (built there): layer norm at 4096x32768, the row cache against single-pass
#             kernels (1024 x 4 on a persistent grid with the staged ring; the row in registers, 512 x 8 at two
#             workgroups per SM), then one launch of each under ncu
set -u
OUT=${OUT:-/tmp/devout}
mkdir -p "$OUT"
# build_probe SRC BIN: build a row-op probe (bench/*_probe.cu) for sm_90a against the row-op headers
build_probe() {
  nvcc -std=c++17 -O3 --expt-relaxed-constexpr --prec-div=false -gencode=arch=compute_90a,code=sm_90a \
    -I ckgen/include -I ckgen/ops/rowops/device "$1" -o "$2"
}
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/site CKGEN_CACHE_DIR=$PWD/.nvcache
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
PYTEST="python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu"  # one process: the GPU tests share one device
# every memcheck stage's prefix: no caching allocator (memcheck sees each tensor's own bounds), no profiler in the tests
MEMCHECK="env PYTORCH_NO_CUDA_MEMORY_CACHING=1 CKGEN_TEST_NO_PROFILER=1 compute-sanitizer --tool memcheck --leak-check no"
MARK=$(mktemp); trap 'echo "=== libraries built on the device: $(find .nvcache -name ckgen-manifest.json -newer "$MARK" 2>/dev/null | wc -l)"' EXIT
for STAGE in "$@"; do
  echo "=== $STAGE $(date +%H:%M:%S)"
  case "$STAGE" in
    info)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,enforced.power.limit,temperature.gpu \
        --format=csv,noheader | tee "$OUT/smi.txt"
      nvcc --version | tail -2 ;;
    gpu)
      timeout 420 $PYTEST tests/runtime > "$OUT/pytest_gpu.txt" 2>&1; echo "pytest -m gpu rc $?"
      grep -E "passed|failed|Error" "$OUT/pytest_gpu.txt" | tail -8
      for shape in "m=1000,n=1104,k=304" "m=1000,n=1100,k=300"; do   # Hopper body; portable body (odd lda)
        python3 -m ckgen run bench/gemm_nv.ck --kernel bf16_rr_t128_256_64_w24_s4 --target sm_90 --size $shape 2>&1 \
          | tee -a "$OUT/ckgen_run.txt"
      done
      python3 -m ckgen run bench/bmm_nv.ck --kernel bmm_bf16_t128_256_64_w24_s4 --target sm_90 \
        --size m=264,n=520,k=136,batch=3 2>&1 | tee -a "$OUT/ckgen_run.txt" ;;
    memcheck)
      timeout 300 $MEMCHECK $PYTEST \
        tests/runtime -k "(pad0 or numpy or errors or batched) and not runs_wh" > "$OUT/memcheck.txt" 2>&1
      echo "memcheck rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck.txt" | tail -3 ;;
    gemm)
      timeout 300 python3 bench/gemm.py --quick --json "$OUT/gemm_quick.json" > "$OUT/gemm_quick.txt" 2>&1
      echo "gemm rc $?"; tail -12 "$OUT/gemm_quick.txt" ;;
    cluster)
      timeout 300 $PYTEST tests/runtime/test_nvidia_cuda.py tests/runtime/test_nvidia_gemm_fused.py -k "c2" \
        > "$OUT/pytest_cluster.txt" 2>&1
      echo "pytest -m gpu (clusters) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_cluster.txt" | tail -8
      timeout 240 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_cuda.py -k "c2 and pad0 and edge" > "$OUT/memcheck_cluster.txt" 2>&1
      echo "memcheck (clusters) rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_cluster.txt" | tail -3
      timeout 420 python3 bench/gemm_cluster.py $CLUSTER_ARGS --json "$OUT/gemm_cluster.json" \
        > "$OUT/gemm_cluster.txt" 2>&1
      echo "gemm_cluster rc $?"; tail -40 "$OUT/gemm_cluster.txt" ;;
    cluster-probe)
      timeout 300 ncu --clock-control none --section LaunchStats --section SpeedOfLight --section Occupancy \
        -k "regex:lin(256|128)_c[12]_tma" --launch-count 4 python3 bench/gemm_cluster.py --decide-only \
        --pairs "lin(256|128)" --limit 1 > "$OUT/cluster_probe.txt" 2>&1
      echo "ncu rc $?"; grep -E "lin(256|128)_c|Duration|Grid Size|Cluster|Registers|Compute \(SM\) Thr|Memory Thr|Waves" \
        "$OUT/cluster_probe.txt" | head -80 ;;
    gemm-full)
      timeout 400 python3 bench/gemm.py --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
      echo "gemm rc $?"; tail -34 "$OUT/gemm.txt" ;;
    tests)
      timeout 200 $PYTEST $TESTS > "$OUT/pytest_tests.txt" 2>&1
      echo "pytest -m gpu $TESTS rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_tests.txt" | tail -8 ;;
    tests-memcheck)
      timeout 200 $MEMCHECK $PYTEST $TESTS \
        -k "${TESTS_K:-not runs_wh}" > "$OUT/memcheck_tests.txt" 2>&1
      echo "memcheck $TESTS rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_tests.txt" | tail -3 ;;
    graph-tune)
      for timing in events graph; do
        timeout 240 python3 -m ckgen tune bench/dispatch_nv.ck --family lin --target sm_90 \
          --shapes "${GRAPH_TUNE_SHAPES:-16x4096x4096,200x3584x4096,700x8192x3584,100x3584x18944,1000x3584x3584}" \
          --db "$OUT/tune_$timing.jsonl" \
          --reps 10 --inner 10 --warmup 3 --timing $timing > "$OUT/tune_$timing.txt" 2>&1
        echo "tune --timing $timing rc $?"; grep -E "^\[|failed" "$OUT/tune_$timing.txt" | head -8
      done
      python3 bench/debug/timing_ab.py "$OUT/tune_events.jsonl" "$OUT/tune_graph.jsonl" \
        bench/runs/2026-12-07g_h100_dispatch_dense2.json | tee "$OUT/timing_ab.txt" ;;
    prebuild)
      python3 bench/nv_prebuild.py -j 16 --only "${PREBUILD:-.}" > "$OUT/prebuild.txt" 2>&1
      echo "prebuild rc $? ($(grep -c ' s ' "$OUT/prebuild.txt") libraries)"; grep -iE "error|Traceback" "$OUT/prebuild.txt" | head -5 ;;
    small-m)
      timeout 400 python3 bench/debug/small_m_ab.py ${SMALL_M_ARGS:-} --json "$OUT/small_m.json" > "$OUT/small_m.txt" 2>&1
      echo "small_m rc $?"; cat "$OUT/small_m.txt" | cut -c1-400 ;;
    skinny)
      timeout 300 python3 bench/skinny_probe.py ${SKINNY_ARGS:-} > "$OUT/skinny.txt" 2>&1; echo "skinny rc $?"
      cat "$OUT/skinny.txt" | cut -c1-400 ;;
    launch-floor)
      nvcc -O2 -o /tmp/launch_floor bench/launch_floor.cu -lcuda && /tmp/launch_floor | tee "$OUT/launch_floor.txt" ;;
    overhead)
      timeout 300 $PYTEST -W "error:ckgen:RuntimeWarning" tests/runtime/test_nvidia_prepared.py \
        tests/runtime/test_torch_ops.py > "$OUT/pytest_prepared.txt" 2>&1
      echo "pytest -m gpu (prepared) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_prepared.txt" | tail -8
      timeout 420 python3 bench/overhead.py --json "$OUT/overhead.json" > "$OUT/overhead.txt" 2>&1
      echo "overhead bench rc $?"; tail -12 "$OUT/overhead.txt"
      timeout 200 python3 bench/overhead_profile.py --calls 10000 > "$OUT/overhead_profile.txt" 2>&1
      echo "overhead profile rc $?"; cat "$OUT/overhead_profile.txt" ;;
    elementwise)
      timeout 200 $PYTEST tests/runtime/test_nvidia_elementwise.py > "$OUT/pytest_elementwise.txt" 2>&1
      echo "pytest -m gpu (elementwise) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_elementwise.txt" | tail -8
      timeout 300 python3 bench/elementwise.py --json "$OUT/elementwise.json" > "$OUT/elementwise.txt" 2>&1
      echo "elementwise bench rc $?"; tail -14 "$OUT/elementwise.txt" ;;
    model)
      timeout 120 python3 examples/llama_layer.py --target sm_90 --config qwen2.5-7b 2>&1 | tail -2
      timeout 400 python3 bench/model.py ${MODEL_ARGS:-} --json "$OUT/model.json" > "$OUT/model.txt" 2>&1
      echo "model bench rc $?"; tail -30 "$OUT/model.txt" ;;
    streamk-eff)
      grep -E '^(512|2048|8192)x' bench/shapes/mistral-7b.txt > "$OUT/streamk_shapes.txt"
      timeout 300 python3 -m ckgen tune bench/debug/streamk_nv.ck --family sk --target sm_90 \
        --shapes-file "$OUT/streamk_shapes.txt" --db "$OUT/streamk_tune.jsonl" --reps 10 --inner 10 --warmup 3 \
        > "$OUT/streamk_tune.txt" 2>&1
      echo "tune rc $?"; python3 bench/debug/streamk_efficiency.py "$OUT/streamk_tune.jsonl" | tee "$OUT/streamk_eff.txt" ;;
    streamk-tail)
      timeout 300 python3 -m ckgen tune bench/debug/streamk_nv.ck --family sk --target sm_90 \
        --shapes-file ${STREAMK_SHAPES:-bench/debug/streamk_tail_shapes.txt} --db "$OUT/streamk_tail.jsonl" --reps 10 --inner 10 \
        --warmup 3 > "$OUT/streamk_tail_tune.txt" 2>&1
      echo "tune rc $?"; python3 bench/debug/streamk_efficiency.py "$OUT/streamk_tail.jsonl" | tee "$OUT/streamk_tail.txt" ;;
    layer-clocks)
      timeout 300 python3 bench/debug/layer_clocks.py --configs llama3-8b,qwen2.5-7b > "$OUT/layer_clocks.txt" 2>&1
      echo "layer_clocks rc $?"; tail -24 "$OUT/layer_clocks.txt"
      timeout 120 python3 bench/debug/layer_clocks.py --shapes 1x2048 --inner 3 > "$OUT/layer_clocks_inner3.txt" 2>&1
      echo "layer_clocks --inner 3 rc $?"; tail -6 "$OUT/layer_clocks_inner3.txt" ;;
    layer-gemms)
      for c in llama3-8b qwen2.5-7b; do
        timeout 200 python3 bench/debug/layer_gemm_ab.py --config $c --shapes ${LAYER_GEMM_SHAPES:-1x2048} --members \
          > "$OUT/layer_gemms_$c.txt" 2>&1
        echo "layer_gemm_ab $c rc $?"; grep -E " us \|" "$OUT/layer_gemms_$c.txt" | cut -c1-400
      done ;;
    layer-prefix)
      timeout 240 python3 bench/debug/layer_prefix.py --configs llama3-8b,qwen2.5-7b > "$OUT/layer_prefix.txt" 2>&1
      echo "layer_prefix rc $?"; tail -24 "$OUT/layer_prefix.txt" ;;
    quant)
      timeout 200 $PYTEST tests/runtime/test_nvidia_quant.py > "$OUT/pytest_quant.txt" 2>&1
      echo "pytest -m gpu (quant) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_quant.txt" | tail -8
      timeout 300 python3 bench/quant.py --json "$OUT/quant.json" ${QUANT_BENCH_ARGS:-} > "$OUT/quant.txt" 2>&1
      echo "quant bench rc $?"; tail -22 "$OUT/quant.txt" ;;
    layer)
      timeout 300 python3 bench/layer.py --json "$OUT/layer.json" > "$OUT/layer.txt" 2>&1
      echo "layer bench rc $?"; tail -8 "$OUT/layer.txt" ;;
    rowops)
      timeout 200 $PYTEST tests/runtime/test_nvidia_rowops.py > "$OUT/pytest_rowops.txt" 2>&1
      echo "pytest -m gpu (rowops) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_rowops.txt" | tail -8
      python3 -m ckgen run examples/rowops.ck --kernel add_rmsnorm_bf16_i8 --target sm_90 --size rows=3,cols=40001 \
        2>&1 | tee "$OUT/ckgen_run_rowops.txt"
      python3 -m ckgen run examples/rowops.ck --kernel layernorm_bf16 --target sm_90 --size rows=999,cols=4097 2>&1 \
        | tee -a "$OUT/ckgen_run_rowops.txt"
      timeout 420 python3 bench/rowops.py --quick --json "$OUT/rowops.json" ${ROWOPS_BENCH_ARGS:-} > "$OUT/rowops.txt" 2>&1
      echo "rowops bench rc $?"; tail -20 "$OUT/rowops.txt" ;;
    rowops-widths)
      timeout 560 python3 bench/rowops.py --kinds "${ROWOPS_KINDS:-hidden}" --part "${ROWOPS_PART:-1/1}" \
        ${ROWOPS_WIDTHS:+--widths "$ROWOPS_WIDTHS"} --json "$OUT/rowops_widths.json" ${ROWOPS_BENCH_ARGS:-} \
        > "$OUT/rowops_widths.txt" 2>&1
      echo "rowops bench (${ROWOPS_KINDS:-hidden} ${ROWOPS_PART:-1/1}) rc $?"; grep -A40 "pairs at" "$OUT/rowops_widths.txt" ;;
    rowops-memcheck)
      timeout 300 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_rowops.py -k "edge_shapes or in_place or numpy" > "$OUT/memcheck_rowops.txt" 2>&1
      echo "memcheck rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_rowops.txt" | tail -3 ;;
    rowops-split)
      timeout 240 $PYTEST tests/runtime/test_nvidia_rowops_split.py > "$OUT/pytest_rowops_split.txt" 2>&1
      echo "pytest -m gpu (rowops split) rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_rowops_split.txt" | tail -8
      timeout 240 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_rowops_split.py -k float64 > "$OUT/memcheck_rowops_split.txt" 2>&1
      echo "memcheck rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_rowops_split.txt" | tail -3 ;;
    rowops-split-bench)
      timeout 280 python3 bench/rowops.py --kinds vocab --candidates --no-compile --json "$OUT/rowops_split.json" \
        > "$OUT/rowops_split.txt" 2>&1
      echo "rowops bench (vocab, clusters) rc $?"; tail -30 "$OUT/rowops_split.txt"
      CKGEN_ROWOPS_CLUSTERS=0 timeout 280 python3 bench/rowops.py --kinds vocab --candidates --no-compile \
        --json "$OUT/rowops_split_ws.json" > "$OUT/rowops_split_ws.txt" 2>&1
      echo "rowops bench (vocab, workspace) rc $?"; tail -30 "$OUT/rowops_split_ws.txt" ;;
    split-clusters)
      { timeout 280 python3 bench/debug/split_clusters.py ${SPLIT_CLUSTERS_ARGS:-}
        timeout 280 python3 bench/debug/split_clusters.py --spec bench/debug/split_heldout_nv.ck ${SPLIT_CLUSTERS_ARGS:-}; } \
        > "$OUT/split_clusters.txt" 2>&1
      echo "split clusters rc $?"; cat "$OUT/split_clusters.txt" ;;
    fp8|fp8-full|fp8-bench)
      if [ "$STAGE" != fp8-bench ]; then
        timeout 300 $PYTEST tests/runtime/test_nvidia_fp8.py tests/runtime/test_nvidia_fp8_hopper.py \
          > "$OUT/fp8_tests.txt" 2>&1
        echo "fp8 tests rc $?"; tail -3 "$OUT/fp8_tests.txt"
      fi
      quick=$([ "$STAGE" = fp8 ] && echo --quick)
      timeout 500 python3 bench/fp8.py $quick ${FP8_BENCH_ARGS:-} --json "$OUT/fp8.json" > "$OUT/fp8.txt" 2>&1
      echo "fp8 bench rc $?"; tail -25 "$OUT/fp8.txt" ;;
    fp8-dispatch)
      timeout 560 python3 bench/fp8.py --dispatch ${FP8_DISPATCH_ARGS:-} --json "$OUT/fp8_dispatch.json" \
        > "$OUT/fp8_dispatch.txt" 2>&1
      echo "fp8 dispatch bench rc $?"; grep -E "geomean|^through|worst" "$OUT/fp8_dispatch.txt" ;;
    fp8-tune)
      if [ -n "${FP8_DB:-}" ]; then cp "$FP8_DB" "$OUT/fp8_tune.jsonl"; echo "fp8 tuning database: $FP8_DB"; fi
      for fam in fp8d_tensor fp8d_rowwise fp8d_block; do
        timeout 300 python3 -m ckgen tune bench/fp8_dispatch_nv.ck --family $fam --target sm_90 \
          --shapes-file bench/shapes/mistral-7b.txt --db "$OUT/fp8_tune.jsonl" --reps 10 --inner 10 --warmup 3 \
          >> "$OUT/fp8_tune.txt" 2>&1
        echo "fp8 tune $fam rc $?"; grep -E "ckgen tune:.*measured" "$OUT/fp8_tune.txt" | tail -1
      done
      timeout 560 python3 bench/fp8.py --dispatch --tuning "$OUT/fp8_tune.jsonl" ${FP8_DISPATCH_ARGS:-} \
        --json "$OUT/fp8_dispatch_tuned.json" > "$OUT/fp8_dispatch_tuned.txt" 2>&1
      echo "fp8 tuned dispatch bench rc $?"; grep -E "geomean|^through|worst" "$OUT/fp8_dispatch_tuned.txt" ;;
    bmm)
      # SM clock and power sampled every 200 ms while it runs (read only: the card's settings are left alone)
      nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 200 \
        > "$OUT/bmm_clocks.csv" 2>&1 & smi=$!
      timeout 240 python3 bench/bmm.py --json "$OUT/bmm.json" > "$OUT/bmm.txt" 2>&1
      echo "bmm rc $?"; kill $smi 2>/dev/null; tail -8 "$OUT/bmm.txt"; grep "spread\|over the rounds" "$OUT/bmm.txt"
      python3 - "$OUT/bmm_clocks.csv" <<'PY'
import statistics, sys
rows = [r.split(", ") for r in open(sys.argv[1]) if r.count(", ") >= 3]
clk = [float(r[1].split()[0]) for r in rows if r[1].split()[0].replace(".", "").isdigit()]
pw = [float(r[2].split()[0]) for r in rows if r[2].split()[0].replace(".", "").isdigit()]
if clk and pw:
    print(f"SM clock MHz min/median/max {min(clk):.0f}/{statistics.median(clk):.0f}/{max(clk):.0f}, "
          f"power W median/max {statistics.median(pw):.0f}/{max(pw):.0f} over {len(clk)} samples")
PY
;;
    dispatch)
      if [ -n "${DISPATCH_DB:-}" ]; then cp "$DISPATCH_DB" "$OUT/tune.jsonl"; echo "tuning database: $DISPATCH_DB"; fi
      if [ -z "${DISPATCH_DB:-}" ] || [ -n "${DISPATCH_RESUME:-}" ]; then
      timeout 480 python3 -m ckgen tune bench/dispatch_nv.ck --family lin --target sm_90 \
        --shapes-file bench/shapes/mistral-7b.txt --db "$OUT/tune.jsonl" --reps 10 --inner 10 --warmup 3 \
        > "$OUT/tune.txt" 2>&1
      echo "tune rc $?"; grep -E "^\[|ckgen tune:" "$OUT/tune.txt" | tail -32; fi
      python3 bench/debug/streamk_efficiency.py "$OUT/tune.jsonl" > "$OUT/streamk_efficiency.txt" 2>&1
      tail -1 "$OUT/streamk_efficiency.txt"  # (the cost model's SCHEDULE_EFFICIENCY, from the tuning set)
      timeout 240 python3 -m ckgen compile bench/dispatch_nv.ck --arch sm_90 --tuning "$OUT/tune.jsonl" -o "$OUT/lib" \
        > "$OUT/compile.txt" 2>&1
      echo "compile rc $?"; tail -3 "$OUT/compile.txt"
      timeout 420 python3 bench/dispatch.py --lib "$OUT/lib/libdispatch_nv.so" --db "$OUT/tune.jsonl" \
        --json "$OUT/dispatch.json" ${DISPATCH_ARGS:-} > "$OUT/dispatch.txt" 2>&1
      echo "dispatch rc $?"; tail -80 "$OUT/dispatch.txt" ;;
    sched)
      timeout 300 $PYTEST tests/runtime/test_nvidia_schedules.py > "$OUT/pytest_sched.txt" 2>&1; echo "pytest sched rc $?"
      grep -E "passed|failed|Error" "$OUT/pytest_sched.txt" | tail -8
      timeout 300 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_schedules.py -k "pad0 or missing" > "$OUT/memcheck_sched.txt" 2>&1
      echo "memcheck sched rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_sched.txt" | tail -3 ;;
    attention)
      timeout 200 $PYTEST tests/runtime/test_nvidia_attention.py > "$OUT/pytest_attention.txt" 2>&1
      echo "pytest attention rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_attention.txt" | tail -8
      python3 -m ckgen run bench/attention_nv.ck --kernel bf16_d128_causal_m128w4n64s2q --target sm_90 \
        --size batch=2,heads=8,heads_kv=2,seqlen_q=333,seqlen_k=1000 2>&1 | tee -a "$OUT/ckgen_run.txt"
      timeout 330 python3 bench/attention.py --json "$OUT/attention.json" > "$OUT/attention.txt" 2>&1
      echo "bench attention rc $?"; grep -E "FAIL|differs" "$OUT/attention.txt" | head; tail -11 "$OUT/attention.txt" ;;
    attention-hopper)
      timeout 240 $PYTEST tests/runtime/test_nvidia_attention.py > "$OUT/pytest_attention.txt" 2>&1
      echo "pytest attention rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_attention.txt" | tail -8
      python3 -m ckgen run bench/attention_nv.ck --kernel bf16_d128_causal_wg128x128s2 --target sm_90 \
        --size batch=2,heads=8,heads_kv=2,seqlen_q=333,seqlen_k=1000 2>&1 | tee -a "$OUT/ckgen_run.txt"
      timeout 300 python3 bench/attention.py --kernels "${ATTN_BENCH_KERNELS:-_wg|_m128w4n64s2[qr]\$}" \
        --json "$OUT/attention.json" > "$OUT/attention.txt" 2>&1
      echo "bench attention rc $?"; grep -E "FAIL|differs" "$OUT/attention.txt" | head; tail -16 "$OUT/attention.txt" ;;
    attention-hopper-memcheck)
      timeout 280 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_attention.py -k "(w128x64 or f16_d64- or f16_d128_window or h140x) and not runs_wh" \
        > "$OUT/memcheck_attention_hopper.txt" 2>&1
      echo "memcheck attention hopper rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_attention_hopper.txt" | tail -3 ;;
    decode)
      timeout 240 $PYTEST tests/runtime/test_nvidia_decode.py > "$OUT/pytest_decode.txt" 2>&1
      echo "pytest decode rc $?"; grep -E "passed|failed|Error" "$OUT/pytest_decode.txt" | tail -8
      timeout 240 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_decode.py -k "page or prefill" > "$OUT/memcheck_decode.txt" 2>&1
      echo "memcheck decode rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_decode.txt" | tail -3
      timeout 500 python3 bench/decode.py ${DECODE_BENCH_ARGS:-} --json "$OUT/decode.json" > "$OUT/decode.txt" 2>&1
      echo "bench decode rc $?"; grep -E "FAIL|differs" "$OUT/decode.txt" | head; grep -A80 "^case" "$OUT/decode.txt" ;;
    decode-bench)
      timeout 400 python3 bench/decode.py ${DECODE_BENCH_ARGS:-} --json "$OUT/decode.json" > "$OUT/decode.txt" 2>&1
      echo "bench decode rc $?"; grep -E "FAIL|differs|^prefill|^b[0-9]" "$OUT/decode.txt" | head -60 ;;
    decode-splits)
      timeout 300 python3 bench/debug/decode_splits.py $DECODE_SPLITS_ARGS > "$OUT/decode_splits.txt" 2>&1
      echo "decode_splits rc $?"; cat "$OUT/decode_splits.txt" ;;
    attention-memcheck)
      timeout 280 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_attention.py -k "(odd or q1k1 or k0 or 4seq or 3seq) and not runs_wh" > "$OUT/memcheck_attention.txt" 2>&1
      echo "memcheck attention rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_attention.txt" | tail -3 ;;
    probe)
      for shape in 64x1024x1024x128 8x4096x4096x1024 512x128x128x128; do python3 bench/probe.py bmm $shape torch; done \
        2>&1 | tee "$OUT/probe.txt"
      NCU="ncu --clock-control none --launch-count 1 --metrics gpu__time_duration.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active"
      for spec in ${PROBE_BMM-64x1024x1024x128:bmm_bf16_t128_256_64_w24_s4:_tma 64x1024x1024x128:torch:nvjet|gemm|xmma|cutlass|sm90}; do
        IFS=: read -r shape kern rx <<< "$spec"
        echo "## ncu bmm $shape $kern" >> "$OUT/probe.txt"
        timeout 120 $NCU -k "regex:$rx" python3 bench/probe.py bmm "$shape" "$kern" >> "$OUT/probe.txt" 2>&1
      done
      for spec in ${PROBE_ROWOPS-4096x32768:layernorm_s32768_t512x2r1 4096x32768:rmsnorm_s32768_t512x2r1}; do
        IFS=: read -r shape kern <<< "$spec"
        echo "## ncu rowops $shape $kern" >> "$OUT/probe.txt"
        timeout 120 $NCU -k "regex:$kern" python3 bench/probe.py rowops "$shape" "$kern" >> "$OUT/probe.txt" 2>&1
      done
      for spec in ${PROBE_GEMM-}; do
        IFS=: read -r shape kern rx <<< "$spec"
        echo "## ncu gemm $shape $kern" >> "$OUT/probe.txt"
        timeout 120 $NCU -k "regex:${rx:-$kern}" python3 bench/probe.py gemm "$shape" "$kern" >> "$OUT/probe.txt" 2>&1
      done
      echo "probe done"; grep -E "^##|torch.bmm|Context|grid_size|gpu__time|throughput|hit_rate|bytes" "$OUT/probe.txt" | head -150 ;;
    carveout)
      build_probe bench/carveout_probe.cu /tmp/carveout_probe && /tmp/carveout_probe 2>&1 | tee "$OUT/carveout.txt" ;;
    persistent)
      build_probe bench/rowops_persistent_probe.cu /tmp/persistent_probe && /tmp/persistent_probe 2>&1 | tee "$OUT/persistent.txt" \
        && ncu --clock-control none --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,lts__t_bytes.sum \
             /tmp/persistent_probe once > "$OUT/persistent_ncu.txt" 2>&1; echo "ncu rc $?"
      grep -E "^  k_|duration|dram__|lts__|l1tex__" "$OUT/persistent_ncu.txt" | sed -E 's/ +/ /g' | head -60 ;;
    weights-probe)
      build_probe bench/rowops_weights_probe.cu /tmp/weights_probe && /tmp/weights_probe 2>&1 | tee "$OUT/weights_probe.txt" ;;
    moe)
      timeout 300 $PYTEST tests/runtime/test_nvidia_moe.py > "$OUT/pytest_moe.txt" 2>&1; echo "pytest moe rc $?"
      grep -E "passed|failed|Error" "$OUT/pytest_moe.txt" | tail -8
      timeout 300 $MEMCHECK $PYTEST \
        tests/runtime/test_nvidia_moe.py -k "not graph" > "$OUT/memcheck_moe.txt" 2>&1
      echo "memcheck moe rc $?"; grep -E "ERROR SUMMARY|passed|failed" "$OUT/memcheck_moe.txt" | tail -3 ;&
    moe-bench)  # (moe goes on here)
      timeout 420 python3 bench/moe.py --quick --json "$OUT/moe.json" > "$OUT/moe.txt" 2>&1; echo "moe rc $?"
      tail -4 "$OUT/moe.txt" ;;
    moe-before)
      PYTHONPATH=$PWD/${BEFORE_TREE:-.carry/main}:/tmp/site timeout 420 python3 bench/moe.py --quick \
        --json "$OUT/moe_before.json" > "$OUT/moe_before.txt" 2>&1; echo "moe (before) rc $?"; tail -4 "$OUT/moe_before.txt" ;;
    moe-fp8)
      timeout 420 python3 bench/moe.py --fp8 --quick --json "$OUT/moe_fp8.json" > "$OUT/moe_fp8.txt" 2>&1
      echo "moe-fp8 rc $?"; tail -4 "$OUT/moe_fp8.txt" ;;
    moe-full)
      timeout 580 python3 bench/moe.py --json "$OUT/moe_full.json" > "$OUT/moe_full.txt" 2>&1; echo "moe-full rc $?"
      tail -4 "$OUT/moe_full.txt" ;;
    benches)
      # the benchmarks of the features whose GPU tests the gpu stage ran (no tests here): the fused GEMM epilogues,
      # the Hopper fp8 kernels, the quantizing row ops, the MoE layer
      timeout 150 python3 bench/gemm_fused.py --json "$OUT/gemm_fused.json" > "$OUT/gemm_fused.txt" 2>&1
      echo "gemm_fused rc $?"; tail -12 "$OUT/gemm_fused.txt"
      timeout 200 python3 bench/fp8.py --only _h --json "$OUT/fp8_h.json" > "$OUT/fp8_h.txt" 2>&1
      echo "fp8 (Hopper) rc $?"; tail -25 "$OUT/fp8_h.txt"
      timeout 120 python3 bench/quant.py --quick --json "$OUT/quant.json" > "$OUT/quant.txt" 2>&1
      echo "quant rc $?"; tail -16 "$OUT/quant.txt"
      timeout 200 python3 bench/moe_layer.py --json "$OUT/moe_layer.json" > "$OUT/moe_layer.txt" 2>&1
      echo "moe-layer rc $?"; tail -10 "$OUT/moe_layer.txt" ;;
    moe-layer)
      timeout 580 python3 bench/moe_layer.py --json "$OUT/moe_layer.json" > "$OUT/moe_layer.txt" 2>&1
      echo "moe-layer rc $?"; cat "$OUT/moe_layer.txt" | tail -8 ;;
    *) echo "unknown stage $STAGE" ;;
  esac
done
