"""The attention op's front end, planner and ABI without compiling: DSL errors, the planned defaults per target,
every refusal naming the parameter, its value and what is legal, the ABI as data and the binding's checks
(layouts through strides, sizes from shapes and offsets, GQA divisibility, scalars), and the C host entry's checks
in the generated launcher."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ckgen.codegen.render import render_header, render_launchers
from ckgen.errors import CkgenError, RuntimeFailure, SpecError, ValidationError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.lower.lds import MAX_TABLE
from ckgen.lower.lds_banks import bank_model, extra_cycles, operand_accesses, plain_layout
from ckgen.ops.attention import plan as P
from ckgen.runtime.binding import bind


def kern(body: str, arch: str = "gfx942", op: str = "attention"):
    (spec,) = load_text(f"kernel k {{ op = {op} {body} }}", "t.ck", default_arches=(arch,))
    return plan_kernel(spec, arch)


def refusal(body: str, arch: str = "gfx942", op: str = "attention") -> ValidationError:
    with pytest.raises(ValidationError) as e:
        kern(body, arch, op)
    return e.value


# ------------------------------------------------------------------------------------------ DSL
@pytest.mark.parametrize("body,msg", [
    ("dtype = f32  head_dim = 128", "attention takes f16 or bf16"),
    ("dtype = bf16  head_dim = 96", "head_dim = 96: not supported"),
    ("dtype = bf16  head_dim = 128  mask = sliding", "expected one of none, causal, window"),
    ("dtype = bf16  head_dim = 128  window = [4, 4]", "window extents need mask = window"),
    ("dtype = bf16  head_dim = 128  mask = window  window = [4]", "expected [left, right]"),
    ("dtype = bf16  head_dim = 128  mask = window  window = [-2, 0]", "expected an integer in -1.."),
    ("dtype = bf16  head_dim = 128  tile = 128x64x32", "expected NxN"),
    ("dtype = bf16  head_dim = 128  q_in_regs = maybe", "expected one of true, false"),
    ("dtype = bf16  head_dim = 128  tlie = 128x64", "did you mean 'tile'"),
    ("head_dim = 128", "missing dtype"),
])
def test_dsl_errors(body, msg):
    with pytest.raises(CkgenError) as e:
        load_text(f"kernel k {{ op = attention {body} }}", "t.ck", default_arches=("gfx942",))
    assert msg in e.value.render()


# ------------------------------------------------------------------------------------------ planned defaults
@pytest.mark.parametrize("arch,hd,tile,waves,bufs,qr,instr", [
    ("sm_90", 128, (128, 64), 4, 2, False, (16, 8, 16)),
    ("sm_90", 64, (128, 64), 4, 2, True, (16, 8, 16)),
    ("sm_90", 256, (128, 32), 8, 1, False, (16, 8, 16)),
    ("sm_80", 128, (128, 64), 4, 2, False, (16, 8, 16)),
    ("gfx942", 128, (128, 32), 4, 2, True, (32, 32, 8)),
    ("gfx90a", 64, (128, 64), 4, 2, True, (32, 32, 8)),
    ("gfx942", 256, (64, 32), 4, 1, True, (16, 16, 16)),   # two buffers do not fit 64 KiB
    ("gfx950", 256, (64, 32), 4, 2, True, (16, 16, 32)),   # they fit 160 KiB
    ("gfx950", 128, (128, 32), 4, 2, True, (32, 32, 16)),
])
def test_planned_defaults(arch, hd, tile, waves, bufs, qr, instr):
    b = kern(f"dtype = bf16  head_dim = {hd}", arch).body
    assert ((b.block_m, b.block_n), b.waves, b.lds_buffers, b.q_in_regs, b.instr.shape) == \
        (tile, waves, bufs, qr, instr)
    assert set(b.planned) >= {"tile", "waves", "lds_buffers", "instr"}
    assert b.lds_bytes <= kern(f"dtype = bf16  head_dim = {hd}", arch).target.lds_bytes


@pytest.mark.parametrize("arch,instr,tile", [
    ("gfx942", "32x32x8", "128x32"), ("gfx942", "16x16x16", "128x64"), ("gfx90a", "16x16x16", "64x128"),
    ("gfx950", "16x16x16", "128x64"), ("gfx950", "16x16x32", "128x32"), ("gfx950", "32x32x16", "128x64"),
    ("gfx950", "32x32x8", "128x64"), ("gfx950", "16x16x16", "64x16"),
])
def test_v_tile_reads_are_conflict_free_under_the_bank_model(arch, instr, tile):
    """The V^T tile's stride is planned with the shared bank model (plan.v_tile_stride): load_v's reads are
    conflict-free on every arch and instruction. The fixed block_n + max(4, kAItems) it replaces left 2-way
    conflicts on gfx950's 16x16x16 and 32x32x16 (the emulator counted 2 extra cycles per V^T read)."""
    p = kern(f"dtype = bf16  head_dim = 64  tile = {tile}  waves = 4  instr = {instr}", arch)
    b, bank = p.body, bank_model(p.target)

    def cost(stride: int) -> int:
        groups = P.v_read_groups(b.block_n, 64, stride, 2, b.instr.m, b.instr.k)
        return extra_cycles(groups, 1, 0, (0,) * MAX_TABLE, bank)["read"]

    assert b.lds_v_stride >= b.block_n and b.lds_v_stride % P.V_RUN == 0
    assert cost(b.lds_v_stride) == 0
    old = b.block_n + max(4, b.instr.a_items(64))
    assert (cost(old) > 0) == (arch == "gfx950" and instr in ("16x16x16", "32x32x16")), (old, cost(old))


@pytest.mark.parametrize("arch,instr,tile", [
    ("gfx90a", "16x16x16", "64x16"), ("gfx942", "16x16x16", "64x16"), ("gfx942", "32x32x8", "128x32"),
    ("gfx950", "16x16x16", "64x16"), ("gfx950", "16x16x16", "128x64"), ("gfx950", "32x32x16", "128x32"),
    ("gfx950", "32x32x8", "128x32"),
])
@pytest.mark.parametrize("hd", [64, 128])
def test_v_tile_stride_weighs_the_loader_writes(arch, instr, tile, hd):
    """plan.v_tile_stride weighs the loader's V^T writes (plan.v_write_groups: one element per lane, 64 / block_n d
    rows kVec apart per wave instruction) with the reads (every wave's): the planned stride keeps the reads free and
    has the fewest write cycles among those. Free on both sides everywhere but gfx950 16x16x16 at block_n 16: there
    reads are free only at stride 8 mod 16 elements, the writes only at 4 or 12 mod 16, so the stride stays 24
    (reads free; writes 2-way, 1 extra cycle per write: the emulator agrees, tests/runtime/test_emu_lds_banks.py)
    rather than 20 / 28 (8 extra read cycles per wave per tile, 4 waves)."""
    p = kern(f"dtype = bf16  head_dim = {hd}  tile = {tile}  waves = 4  instr = {instr}", arch)
    b, bank, waves = p.body, bank_model(p.target), p.threads // 64

    def cost(stride: int) -> tuple[int, int]:
        reads = [replace(g, weight=waves) for g in P.v_read_groups(b.block_n, hd, stride, 2, b.instr.m, b.instr.k)]
        writes = P.v_write_groups(b.block_n, hd, stride, 2, b.vec, p.threads)
        c = extra_cycles(reads + writes, 1, 0, (0,) * MAX_TABLE, bank)
        return c["read"], c["write"]

    r, w = cost(b.lds_v_stride)
    candidates = [cost(b.block_n + 4 * (i + 1)) for i in range(16)]
    assert r == 0 and w == min(cw for cr, cw in candidates if cr == 0)
    stuck = arch == "gfx950" and instr == "16x16x16" and b.block_n == 16
    assert (w > 0) == stuck, (b.lds_v_stride, r, w)
    if stuck:
        # one extra cycle per element write: kVec writes per unit, head_dim / kVec * 16 units
        assert (b.lds_v_stride, w) == (24, hd * 16 // 64)
        assert all(cr > 0 or cw > 0 for cr, cw in candidates)
        assert all(cr + cw > w for cr, cw in candidates if cr > 0)


@pytest.mark.parametrize("arch,instr", [("gfx90a", "32x32x8"), ("gfx942", "32x32x8"), ("gfx942", "16x16x16"),
                                        ("gfx950", "32x32x16"), ("gfx950", "16x16x32"), ("gfx950", "32x32x8")])
@pytest.mark.parametrize("hd,tile", [(64, "128x64"), (128, "128x32"), (256, "64x32")])
def test_k_tile_is_swizzled_and_conflict_free_under_the_bank_model(arch, instr, hd, tile):
    """The K tile takes the GEMM's swizzled layout, planned by the shared bank model (plan.k_tile_layout):
    unpadded, its load_k reads and loader writes conflict-free under the bank model (the emulator agrees:
    tests/runtime/test_emu_lds_banks.py)."""
    waves = 2 if hd == 256 else 4
    p = kern(f"dtype = f16  head_dim = {hd}  tile = {tile}  waves = {waves}  instr = {instr}", arch)
    b, bank = p.body, bank_model(p.target)
    k = b.lds_k
    assert b.lds_k_stride == 0 and k is not None and (k.rows, k.tile_k) == (b.block_n, hd)
    assert (k.read_conflicts, k.write_conflicts) == (0, 0)
    assert b.lds_bytes == b.lds_buffers * (b.block_n * hd + hd * b.lds_v_stride) * 2
    shape = P.k_tile_shape(b.block_n, hd, 2, b.vec, p.threads, b.instr)
    groups = operand_accesses(shape, k.granule, 1)
    assert extra_cycles(groups, k.granule * 2, k.low_bits, k.table, bank) == {"read": 0, "write": 0}
    # plain rows of exactly head_dim (no pad, no XOR) conflict on the reads
    plain = plain_layout(shape)
    groups = operand_accesses(shape, plain.granule, 1)
    assert extra_cycles(groups, plain.granule * 2, 0, plain.table, bank)["read"] > 0


def test_a_dtype_refusal_lists_only_the_dtypes_the_body_takes():
    """gfx908 has bf16 MFMA, but only the 2-element ones the body cannot use: legal is f16 alone."""
    e = refusal("dtype = bf16  head_dim = 128", "gfx908")
    assert e.param == "dtype" and "legal: f16\n" in e.render() + "\n", e.render()


@pytest.mark.parametrize("arch,hd,hint", [("gfx942", 128, 1), ("gfx90a", 64, 1), ("gfx950", 128, 2),
                                          ("gfx942", 128, 2)])
def test_occupancy_hint_stays_within_what_the_lds_lets_run(arch, hd, hint):
    """The planned hint asks for 2 waves per SIMD only where the LDS holds 2 workgroups (else clang warns that
    it cannot meet it); one LDS buffer (17920 bytes at d128) leaves room for 3 on gfx942."""
    bufs = "  lds_buffers = 1" if hint == 2 and arch == "gfx942" else ""
    assert kern(f"dtype = bf16  head_dim = {hd}{bufs}", arch).body.waves_per_eu == hint


def test_written_values_are_kept_and_waves_follow_the_tile():
    b = kern("dtype = f16  head_dim = 64  tile = 64x128", "sm_90").body
    assert (b.block_m, b.block_n, b.waves, b.q_in_regs) == (64, 128, 4, True) and "tile" not in b.planned
    b = kern("dtype = f16  head_dim = 128  tile = 64x32", "gfx942").body
    assert b.waves * b.instr.n <= 64 and 64 % (b.waves * b.instr.n) == 0
    assert kern("dtype = f16  head_dim = 128", "sm_90").body.kv_barriers == 2
    assert kern("dtype = f16  head_dim = 128  kv_barriers = 1", "sm_90").body.kv_barriers == 1


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize("arch,body,param,legal", [
    ("gfx942", "tile = 96x32  waves = 4", "tile", "queries per wave"),
    ("sm_90", "tile = 128x24", "tile", "tile N a multiple of 16"),
    ("sm_90", "tile = 128x64  waves = 2", "tile", "queries per wave"),
    ("gfx942", "instr = 32x32x4", "instr", "32x32x8, 16x16x16"),
    ("sm_90", "instr = 32x32x8", "instr", "16x8x16"),
    ("gfx942", "lds_buffers = 3", "lds_buffers", "1, 2"),
    ("sm_90", "lds_buffers = 5", "lds_buffers", "1, 2, 3, 4"),
    ("gfx942", "q_in_regs = false", "q_in_regs", "true"),
    ("sm_90", "waves_per_eu = 2", "waves_per_eu", "1 (or leave it out)"),
    ("gfx942", "waves = 32  tile = 256x32  instr = 16x16x16", "waves", "1..16"),
    ("sm_90", "tile = 128x64  q_in_regs = true", "q_in_regs", "false (Q re-read from shared memory)"),
    ("sm_90", "tile = 128x128  q_in_regs = false", "tile", "at most 255 registers"),
    ("gfx942", "tile = 128x256  lds_buffers = 2", "tile", "<= 65536 bytes"),
    ("gfx942", "tile = 512x32", "tile", "M and N in 16..256"),
    ("gfx942", "kv_barriers = 1", "kv_barriers", "(leave it out)"),
    ("gfx942", "waves_per_eu = 2", "waves_per_eu", "1..1"),      # 34816 bytes of LDS: one workgroup per CU
    ("sm_90", "kv_barriers = 1  lds_buffers = 1", "lds_buffers", ">= 2 with kv_barriers = 1"),
])
def test_refusals_name_param_value_and_legal(arch, body, param, legal):
    e = refusal(f"dtype = bf16  head_dim = 128  {body}", arch)
    assert e.param == param, e.render()
    assert legal in e.render(), e.render()
    assert f"kernel 'k' on {arch}" in e.render()


def test_refusal_of_a_planned_value_says_so():
    e = refusal("dtype = bf16  head_dim = 128  tile = 96x32", "sm_90")  # waves 4 (planned) do not split 96
    assert "(planned)" in e.render()


def test_dtype_without_instructions_is_refused():
    e = refusal("dtype = bf16  head_dim = 128", "gfx908")  # gfx908 has only the half-rate bf16 forms
    assert e.param == "dtype" and "f16" in e.render()


# ------------------------------------------------------------------------------------------ ABI
def test_abi_dense_and_varlen():
    dense = kern("dtype = bf16  head_dim = 128", "sm_90").abi
    names = [a.name for a in dense.args]
    assert names[:7] == ["Q", "K", "V", "O", "LSE", "cu_seqlens_q", "cu_seqlens_k"]
    assert names[7:12] == ["batch", "heads", "heads_kv", "seqlen_q", "seqlen_k"]
    assert names[-3:] == ["scale", "window_left", "window_right"]
    assert dense["Q"].dims == ("batch", "seqlen_q", "heads", 128) and dense["cu_seqlens_q"].unused
    assert dense["scale"].default == pytest.approx(128 ** -0.5) and dense.divides == (("heads_kv", "heads"),)
    var = kern("dtype = f16  head_dim = 64  mask = window  window = [8, 0]  varlen = true", "sm_90").abi
    assert var["Q"].dims == ("total_q", "heads", 64) and var["LSE"].dims == ("heads", "total_q")
    assert var["cu_seqlens_k"].dims == ("batch+1",) and var["seqlen_k"].from_offsets == "cu_seqlens_k"
    assert (var["window_left"].default, var["window_right"].default) == (8, 0)
    assert [a.name for a in var.args] == names  # one signature for every attention kernel


def test_launcher_checks_gqa_scale_and_window_types():
    p = kern("dtype = bf16  head_dim = 128", "sm_90")
    host = render_launchers("lib", [p], "cuda")
    assert "if (heads_kv < 1 || heads % heads_kv != 0) return CKGEN_ERROR_INVALID_VALUE;" in host
    assert "if (!(scale >= 1.1754943508222875e-38f && scale <= 3.4028234663852886e+38f))" in host
    assert "int32_t window_left, int32_t window_right, void* stream" in render_header("lib", [p])


# ------------------------------------------------------------------------------------------ binding
class Host:
    """A backend that binds numpy arrays (no build)."""

    def array_info(self, obj, what):
        from ckgen.backends.base import numpy_array_info

        return numpy_array_info(obj, what)

    def new_output(self, shape, np_dtype, order, like, dtype=None):
        from ckgen.backends.base import new_host_output

        return new_host_output(shape, np_dtype, order)


def arrays(b=2, sq=5, sk=7, h=4, hkv=2, d=64, layout="bshd", dt=np.float16):
    def t(s, heads):
        if layout == "bhsd":
            return np.zeros((b, heads, s, d), dt).transpose(0, 2, 1, 3)
        return np.zeros((b, s, heads, d), dt)
    return t(sq, h), t(sk, hkv), t(sk, hkv)


def test_bshd_and_bhsd_bind_through_strides():
    p = kern("dtype = f16  head_dim = 64", "sm_90")
    for layout in ("bshd", "bhsd"):
        q, k, v = arrays(layout=layout)
        call = bind(p, Host(), {"Q": q, "K": k, "V": v})
        vals = dict(zip([a.name for a in p.abi.args], call.values, strict=True))
        assert call.sizes == {"batch": 2, "heads": 4, "heads_kv": 2, "seqlen_q": 5, "seqlen_k": 7}
        qs = (vals["q_batch_stride"], vals["q_seq_stride"], vals["q_head_stride"])
        assert qs == ((5 * 4 * 64, 4 * 64, 64) if layout == "bshd" else (4 * 5 * 64, 64, 5 * 64))
        assert vals["O"].shape == (2, 5, 4, 64) and vals["LSE"].shape == (2, 4, 5)
        assert (vals["lse_batch_stride"], vals["lse_head_stride"]) == (20, 5)
        assert vals["scale"] == pytest.approx(0.125, rel=1e-6) and vals["window_left"] == -1


@pytest.mark.parametrize("mutate,msg", [
    (lambda a: a.update(K=np.zeros((2, 7, 3, 64), np.float16), V=np.zeros((2, 7, 3, 64), np.float16)),
     "heads = 4 must be a multiple of heads_kv = 3"),
    (lambda a: a.update(Q=np.zeros((2, 5, 4, 32), np.float16)), "Q has shape"),
    (lambda a: a.update(Q=np.zeros((2, 5, 4, 64), np.float16).transpose(0, 1, 3, 2).copy().transpose(0, 1, 3, 2)),
     "Q must be row-major (unit stride along its last dim)"),
    (lambda a: a.update(K=np.zeros((2, 8, 2, 64), np.float16)), "their seqlen_k differ"),
    (lambda a: a.update(O=np.lib.stride_tricks.as_strided(np.zeros(512, np.float16), shape=(2, 5, 4, 64),
                                                          strides=(0, 0, 128, 2))), "share memory"),
    (lambda a: a.update(scale=0.0), "scale = 0.0: out of range"),
    (lambda a: a.update(scale=float("nan")), "out of range"),
    (lambda a: a.update(window_left=1.5), "expected an integer"),
])
def test_binding_refusals(mutate, msg):
    p = kern("dtype = f16  head_dim = 64", "sm_90")
    q, k, v = arrays()
    a = {"Q": q, "K": k, "V": v}
    mutate(a)
    scalars = {n: a.pop(n) for n in ("scale", "window_left") if n in a}
    with pytest.raises(RuntimeFailure) as e:
        bind(p, Host(), a, scalars=scalars)
    assert msg in e.value.render()


def test_grid_limits_are_refused_by_name():
    """Heads over 65535 (y) are refused: K and V follow heads_kv, so a slice of the heads cannot run alone; a dense
    batch over 65535 (z) runs as sub-problems (every tensor has a batch stride); a varlen one is refused (its
    offsets arrays are batch + 1 long and are not sliced)."""
    p = kern("dtype = f16  head_dim = 64", "sm_90")
    x = np.zeros(64, np.float16)
    q = np.lib.stride_tricks.as_strided(x, shape=(1, 1, 70000, 64), strides=(0, 0, 0, 2))
    with pytest.raises(RuntimeFailure, match="size heads = 70000 needs 70000 workgroups along grid y"):
        bind(p, Host(), {"Q": q, "K": q, "V": q})
    q = np.lib.stride_tricks.as_strided(x, shape=(70000, 1, 1, 64), strides=(0, 0, 0, 2))
    assert bind(p, Host(), {"Q": q, "K": q, "V": q}).sizes["batch"] == 70000   # O and LSE allocated (9 MB)
    v = kern("dtype = f16  head_dim = 64  varlen = true", "sm_90")
    cu = np.arange(70001, dtype=np.int32)
    q = np.lib.stride_tricks.as_strided(x, shape=(70000, 1, 64), strides=(0, 0, 2))
    with pytest.raises(RuntimeFailure, match="size batch = 70000 needs 70000 workgroups along grid z"):
        bind(v, Host(), {"Q": q, "K": q, "V": q, "cu_seqlens_q": cu, "cu_seqlens_k": cu})


def test_varlen_sizes_come_from_the_offsets():
    p = kern("dtype = f16  head_dim = 64  mask = causal  varlen = true", "sm_90")
    cq, ck = np.array([0, 3, 3, 10], np.int32), np.array([0, 4, 9, 9], np.int32)
    q = np.zeros((10, 4, 64), np.float16)
    k = np.zeros((9, 2, 64), np.float16)
    call = bind(p, Host(), {"Q": q, "K": k, "V": k, "cu_seqlens_q": cq, "cu_seqlens_k": ck})
    assert call.sizes == {"batch": 3, "heads": 4, "heads_kv": 2, "seqlen_q": 7, "seqlen_k": 5}
    vals = dict(zip([a.name for a in p.abi.args], call.values, strict=True))
    assert vals["LSE"].shape == (4, 10) and vals["O"].shape == (10, 4, 64)
    call = bind(p, Host(), {"Q": q, "K": k, "V": k, "cu_seqlens_q": cq, "cu_seqlens_k": ck}, sizes={"seqlen_q": 9})
    assert call.sizes["seqlen_q"] == 9
    for bad, msg in ((np.array([0, 3, 2, 10], np.int32), "non-decreasing offsets"),
                     (np.array([0, 3, 3, 11], np.int32), "at most total_q = 10"),
                     (np.array([1, 3, 3, 10], np.int32), "from 0")):
        with pytest.raises(RuntimeFailure, match=msg):
            bind(p, Host(), {"Q": q, "K": k, "V": k, "cu_seqlens_q": bad, "cu_seqlens_k": ck})
    with pytest.raises(RuntimeFailure, match="below the longest run"):
        bind(p, Host(), {"Q": q, "K": k, "V": k, "cu_seqlens_q": cq, "cu_seqlens_k": ck}, sizes={"seqlen_q": 6})
    with pytest.raises(RuntimeFailure, match="their batch differ"):
        bind(p, Host(), {"Q": q, "K": k, "V": k, "cu_seqlens_q": cq, "cu_seqlens_k": ck[:3]})


def test_unused_offsets_must_be_none():
    p = kern("dtype = f16  head_dim = 64", "sm_90")
    q, k, v = arrays()
    with pytest.raises(RuntimeFailure, match="cu_seqlens_q is not used by this kernel"):
        bind(p, Host(), {"Q": q, "K": k, "V": v, "cu_seqlens_q": np.zeros(3, np.int32)})


def test_spec_error_has_a_span():
    with pytest.raises(SpecError) as e:
        load_text("kernel k {\n op = attention\n dtype = bf16\n head_dim = 100\n}", "t.ck", default_arches=("gfx942",))
    assert "t.ck:4" in e.value.render()
