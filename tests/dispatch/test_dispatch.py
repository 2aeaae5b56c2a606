"""Dispatchers (issue 13): the choice (tuned / nearest / model, workspace-less callers), the generated C choosing
exactly as Python does, the generated C entry running the chosen kernel correctly on the emulator (rung 2 of the
C dispatcher), the Python callable of a family, ``ckgen explain`` and the tuning database's errors."""

from __future__ import annotations

import ctypes
import dataclasses
import random
import shutil

import numpy as np
import pytest

from ckgen import __version__
from ckgen.backends import emu
from ckgen.cli import main
from ckgen.dispatch import db
from ckgen.dispatch.codegen import dispatch_sources
from ckgen.dispatch.table import Table, Tuned, choose, parse_shape, tables
from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.ir.arrays import from_bf16, to_bf16
from ckgen.ir.registry import get_op
from ckgen.lower import plan_all

needs_clang = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SRC = """
target gfx942
family fam {
  A = bf16 row  B = bf16 col  C = bf16 row
  tile in [16x32x32, 64x32x32]  waves = 1x2
  schedule in [tile, splitk]
}
"""


@pytest.fixture(scope="module")
def plans():
    return plan_all(load_text(SRC, "fam.ck"))


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """One path for the module: the path is in the generated sources, so the kernels build once."""
    p = tmp_path_factory.mktemp("fam") / "fam.ck"
    p.write_text(SRC)
    return p


def _record(p, shape, us, status="ok"):
    return db.Record({"ckgen": __version__, "device": "test", "arch": p.arch, "target": "emu", "op": p.op,
                      "family": p.spec.family, "kernel": p.name, "kernel_key": db.kernel_key(p.spec),
                      "signature_key": db.signature_key(get_op(p.op).signature(p.spec)), "signature": {},
                      "shape": dict(zip(("M", "N", "K"), shape, strict=True)), "status": status, "time_us": us})


def _fake_db(plans, seed=0):
    rng = random.Random(seed)
    recs = []
    for shape in [(1, 256, 512), (16, 256, 512), (64, 128, 128), (300, 300, 64)]:
        for p in plans:
            if rng.random() < 0.8:
                recs.append(_record(p, shape, rng.uniform(1, 100)))
    return recs


def test_choice_tuned_nearest_model(plans):
    by = {p.name: p for p in plans}
    recs = [_record(by["fam_tile16x32x32_scheduletile"], (16, 256, 512), 50.0),
            _record(by["fam_tile16x32x32_schedulesplitk"], (16, 256, 512), 10.0),
            _record(by["fam_tile64x32x32_scheduletile"], (16, 256, 512), 5.0, status="numerics")]
    (t,) = tables(plans, recs)
    c = choose(t, (16, 256, 512))
    assert (c.kernel, c.how) == ("fam_tile16x32x32_schedulesplitk", "tuned") and "measured fastest" in c.reason
    c = choose(t, (16, 256, 512), has_workspace=False)     # a C caller without a workspace: no split-K
    assert c.kernel == "fam_tile16x32x32_scheduletile"
    c = choose(t, (17, 250, 500))
    assert c.how == "nearest" and "nearest tuned shape 16x256x512" in c.reason
    assert c.estimates[[m.name for m in t.members].index("fam_tile64x32x32_scheduletile")] is None  # failed numerics
    (t0,) = tables(plans, [])
    c = choose(t0, (1, 4096, 4096))
    assert c.how == "model" and all(e is not None for e in c.estimates)
    assert choose(t0, (1, 4096, 4096), has_workspace=False).kernel.endswith("scheduletile")


def test_stale_records_are_ignored(plans):
    p = plans[0]
    rec = _record(p, (16, 256, 512), 1.0)
    rec.data["kernel_key"] = "0" * 64  # the kernel's parameters changed since it was tuned
    (t,) = tables(plans, [rec])
    assert t.tuned == ()


@needs_clang
def test_generated_c_chooses_like_python_and_runs(plans):
    (t,) = tables(plans, _fake_db(plans))
    (t0,) = tables(plans, [])  # the cost model alone: a second dispatcher in the same library
    t0 = dataclasses.replace(t0, name="fam0")
    sources = dispatch_sources("famd", [t, t0])
    built = emu.build_library("famd", [p for x in (t, t0) for p in x.plans], host_sources=sources)
    lib = ctypes.CDLL(str(built.library), mode=ctypes.RTLD_LOCAL)
    fchoice = lib.ckgen_fam_choice
    fchoice.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int]
    fchoice.restype = ctypes.c_int
    rng = random.Random(3)
    for _ in range(1500):
        s = tuple(rng.choice([rng.randint(0, 40), rng.randint(1, 5000)]) for _ in range(3))
        for ws in (0, 1):
            assert fchoice(*s, ws) == choose(t, s, bool(ws)).index, (s, ws)
    lib.ckgen_fam0_choice.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int]
    for _ in range(500):
        s = tuple(rng.randint(1, 20000) for _ in range(3))
        assert lib.ckgen_fam0_choice(*s, 1) == choose(t0, s).index, s
    # the entry: the chosen kernel's numerics, with and without a workspace
    name = lib.ckgen_fam_kernel_name
    name.restype = ctypes.c_char_p
    wsb = lib.ckgen_fam_workspace_bytes
    wsb.argtypes = [ctypes.c_int64] * 3
    wsb.restype = ctypes.c_size_t
    entry = lib.ckgen_fam
    entry.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 6 + [ctypes.c_void_p] * 2
    lib.ckgen_emu_register_buffer.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    for (M, N, K) in [(16, 256, 512), (37, 70, 200), (1, 33, 1000)]:
        for with_ws in (True, False):
            a = to_bf16(np.random.default_rng(M).uniform(-1, 1, (M, K)))
            b = np.asfortranarray(to_bf16(np.random.default_rng(N).uniform(-1, 1, (K, N))))
            c = np.full((M, N), 0xFFFF, np.uint16)
            n = wsb(M, N, K)
            ws = np.zeros(max(n, 1), np.uint8)
            lib.ckgen_emu_clear_buffers()
            for arr, nm in ((a, b"A"), (b, b"B"), (c, b"C"), (ws, b"ws")):
                lib.ckgen_emu_register_buffer(arr.ctypes.data, arr.nbytes, nm)
            st = entry(a.ctypes.data, b.ctypes.data, c.ctypes.data, None, M, N, K, K, K, N,
                       ws.ctypes.data if with_ws else None, None)
            assert st == 0
            idx = fchoice(M, N, K, int(with_ws))
            assert with_ws or not t.members[idx].needs_workspace
            ref = from_bf16(a).astype(np.float64) @ from_bf16(b).astype(np.float64)
            err = np.linalg.norm(from_bf16(c) - ref) / np.linalg.norm(ref)
            assert err < 1e-2, (M, N, K, name(idx), err)
            assert not ws.any()


@needs_clang
def test_jit_of_a_family_dispatches(tmp_path, plans, src):
    import ckgen

    path = src
    dbp = tmp_path / "t.jsonl"
    db.write(dbp, _fake_db(plans, seed=1))
    d = ckgen.jit(str(path), kernel="fam", target="emu", tuning=str(dbp))
    assert len(d.table.tuned) == 4
    for M, N, K in [(16, 256, 512), (5, 40, 70)]:
        a = to_bf16(np.random.default_rng(1).uniform(-1, 1, (M, K)))
        b = np.asfortranarray(to_bf16(np.random.default_rng(2).uniform(-1, 1, (K, N))))
        c = d(a, b)
        ref = from_bf16(a).astype(np.float64) @ from_bf16(b).astype(np.float64)
        assert np.linalg.norm(from_bf16(c) - ref) / np.linalg.norm(ref) < 1e-2
        assert d.explain(M, N, K).kernel in d._kernels  # the chosen member was built, and only on demand
    with pytest.raises(CkgenError, match="no kernel named 'nope' \\(and no family\\)"):
        ckgen.jit(str(path), kernel="nope", target="emu")


def test_explain_command(tmp_path, capsys, plans, src):
    path = src
    dbp = tmp_path / "t.jsonl"
    db.write(dbp, _fake_db(plans))
    assert main(["explain", str(path), "--family", "fam", "--shape", "16x256x512,20x300x500", "--tuning", str(dbp)]) == 0
    out = capsys.readouterr().out
    assert "16x256x512: fam_" in out and "was tuned" in out and "nearest tuned shape" in out
    assert main(["explain", str(path), "--family", "fam", "--shape", "12x9"]) == 2
    assert "expected MxNxK" in capsys.readouterr().err


def test_explain_without_arch_plans_for_the_familys_own_target(tmp_path, capsys):
    """A family of one member (a block without alternatives) dispatches to it; without --arch, explain plans for
    the family's first target, here an NVIDIA one, rather than an AMD default."""
    path = tmp_path / "one.ck"
    path.write_text("target sm_90\nfamily lin { A = bf16 row  B = bf16 col  C = bf16 row  tile = 128x128x32 "
                    "waves = 2x2 }\n")
    assert main(["explain", str(path), "--family", "lin", "--shape", "128x128x128"]) == 0
    out = capsys.readouterr().out
    assert "dispatcher ckgen_lin on sm_90: 1 kernel(s)" in out and "128x128x128: lin_1" in out


@needs_clang
def test_family_blocks_per_arch_serve_only_their_arch(tmp_path):
    """A family written as one block per arch (``arch = [...]``): the emulator (an AMD arch) gets the AMD block's
    member only, not the NVIDIA block's members planned for the wrong target."""
    import ckgen

    path = tmp_path / "two.ck"
    path.write_text("target gfx942, sm_90\n"
                    "family lin { arch = [sm_90]  A = bf16 row  B = bf16 col  C = bf16 row  tile in [128x256x64, "
                    "128x128x64]  waves = 2x4  lds_buffers = 4 }\n"
                    "family lin { arch = [gfx942]  A = bf16 row  B = bf16 col  C = bf16 row  tile = 32x32x32  "
                    "waves = 1x1 }\n")
    d = ckgen.jit(str(path), kernel="lin", target="emu")
    assert d.arch == "gfx942" and [p.spec.arches for p in d.table.plans] == [("gfx942",)]
    a = to_bf16(np.random.default_rng(1).uniform(-1, 1, (5, 70)))
    b = np.asfortranarray(to_bf16(np.random.default_rng(2).uniform(-1, 1, (70, 40))))
    ref = from_bf16(a).astype(np.float64) @ from_bf16(b).astype(np.float64)
    assert np.linalg.norm(from_bf16(d(a, b)) - ref) / np.linalg.norm(ref) < 1e-2


def test_parse_shape_and_database_errors(tmp_path):
    assert parse_shape("1x2x3", ("M", "N", "K")) == (1, 2, 3)
    assert parse_shape("4x5x6", ("M", "N", "K", "batch"), {"batch": 1}) == (4, 5, 6, 1)
    # block scales' counts follow from K and N when left out (ceil(size / block)); given, they are kept as typed
    blocks = (("kb", "K", 128), ("nb", "N", 128))
    assert parse_shape("7x130x300", ("M", "N", "K", "kb", "nb"), {}, blocks) == (7, 130, 300, 3, 2)
    assert parse_shape("7x130x300x3x2", ("M", "N", "K", "kb", "nb"), {}, blocks) == (7, 130, 300, 3, 2)
    with pytest.raises(CkgenError, match="expected MxNxKxkbxnb"):
        parse_shape("7x130", ("M", "N", "K", "kb", "nb"), {}, blocks)
    for bad in ("1x2", "1x2x3x4", "ax2x3", "-1x2x3"):
        with pytest.raises(CkgenError):
            parse_shape(bad, ("M", "N", "K"))
    p = tmp_path / "bad.jsonl"
    p.write_text('{"arch": "gfx942"}\n')
    with pytest.raises(CkgenError, match="bad.jsonl:1: a tuning record lacks"):
        db.read(p)
    p.write_text("not json\n")
    with pytest.raises(CkgenError, match="bad.jsonl:1: not a JSON object"):
        db.read(p)
    assert db.read(tmp_path / "missing.jsonl") == []


def test_table_without_members_is_an_error(plans):
    with pytest.raises(CkgenError, match="no family named 'x'"):
        tables(plans, [], "x")
    t = Table("t", "f", "gemm", "gfx942", {}, ("M", "N", "K"), (), (Tuned((1, 1, 1), ()),))
    assert t.to_json()["tuned"][0]["sizes"] == [1, 1, 1]


def test_compile_with_tuning_builds_the_dispatcher_into_the_amd_library(tmp_path, capsys, plans, src):
    """ckgen compile --tuning (gfx942): the dispatcher is in the library (its choice runs without a GPU), the
    header declares it, the manifest lists it."""
    import json

    if shutil.which("clang++-19") is None:
        pytest.skip("clang++-19 is not installed")
    dbp = tmp_path / "t.jsonl"
    db.write(dbp, _fake_db(plans, seed=2))
    out = tmp_path / "out"
    assert main(["compile", str(src), "--arch", "gfx942", "-o", str(out), "--tuning", str(dbp), "-j", "2"]) == 0
    assert "dispatcher ckgen_fam: 4 kernel(s), 4 tuned shape(s) on gfx942" in capsys.readouterr().out
    header = (out / "fam.h").read_text()
    assert "int ckgen_fam(const void* A, const void* B, void* C, const void* bias, int64_t M" in header
    assert "size_t ckgen_fam_workspace_bytes(int64_t M, int64_t N, int64_t K);" in header
    manifest = json.loads((out / "manifest.json").read_text())
    (d,) = manifest["dispatchers"]
    assert d["symbol"] == "ckgen_fam" and d["tuned_shapes"] == 4 and len(d["members"]) == 4
    assert manifest["schema_version"] == 3
    lib = ctypes.CDLL(str(out / "libfam.so"))
    lib.ckgen_fam_choice.argtypes = [ctypes.c_int64] * 3 + [ctypes.c_int]
    (t,) = tables(plans, db.read(dbp))
    assert all(lib.ckgen_fam_choice(*s, 1) == choose(t, s).index for s in [(16, 256, 512), (3, 3, 3), (999, 77, 5)])


@pytest.mark.parametrize("arch", ["gfx942", "gfx90a", "gfx950", "sm_90", "sm_80"])
def test_model_picks_the_small_m_tile_for_decode_only(arch):
    """examples/gemm_schedules.ck's linear_bf16 (16x64x64 split-K and 128x128x32 tiles), no tuning: the cost model
    must give decode shapes to the 16-row tile and 4096^3 to the 128-row one (the 16-row tile's LDS reads and
    global loads per FLOP are what make it lose there; it won on wave quantization alone before)."""
    from pathlib import Path

    from ckgen.frontend import load_file
    from ckgen.runtime.family import family_plans

    ex = Path(__file__).resolve().parents[2] / "examples" / "gemm_schedules.ck"
    vendor = "nvidia" if arch.startswith("sm_") else "amd"
    (t,) = tables(family_plans(load_file(ex), "linear_bf16", vendor, arch), [], "linear_bf16")
    big, small = (f"linear_bf16_tile{x}" for x in ("128x128x32", "16x64x64"))
    assert choose(t, (4096, 4096, 4096)).kernel == big
    assert choose(t, (8192, 8192, 8192)).kernel == big
    for m in (1, 16, 64):
        assert choose(t, (m, 4096, 4096)).kernel == small, m
    # tuned at the decode shape only, the 16-row tile measured 8x faster there: scaled by the model to 4096^3
    # (the nearest rule), the 128-row tile still wins
    names = [m.name for m in t.members]
    times = tuple(12e-6 if n == small else 100e-6 for n in names)
    tuned = dataclasses.replace(t, tuned=(Tuned((16, 4096, 4096), times),))
    c = choose(tuned, (4096, 4096, 4096))
    assert (c.how, c.kernel) == ("nearest", big)
    assert choose(tuned, (16, 4096, 4096)).kernel == small


def test_model_prefers_one_tile_per_workgroup_to_stream_k_on_the_hopper_body():
    """Stream-K on the Hopper body runs under the tile schedule's speed where tiles fill whole waves (measured:
    ckgen.ops.gemm.cost_model.SCHEDULE_EFFICIENCY, 0.68 with the first partition, then 0.93); untuned, the model must
    not give it the large prefill shapes (with 0.68 unmodelled it chose stream-K at 2048 x 28672 x 4096 and ran 1.65x
    slower than the tile schedule's estimate)."""
    from pathlib import Path

    from ckgen.frontend import load_file
    from ckgen.runtime.family import family_plans

    ex = Path(__file__).resolve().parents[2] / "examples" / "llama_layer.ck"
    (t,) = tables(family_plans(load_file(ex), "llama_qkv", "nvidia", "sm_90"), [], "llama_qkv")
    for shape in [(2048, 28672, 4096), (8192, 28672, 4096), (2048, 4096, 14336), (8192, 4096, 4096)]:
        assert choose(t, shape).kernel.endswith("_scheduletile"), shape


def test_model_charges_split_k_its_hand_off():
    """A split-K piece's hand-off (ckgen.ops.gemm.cost_model.FIXUP_S, measured on an H100): untuned, the model keeps
    the 64x128 fp8 Hopper tile whole where its tiles give the SMs enough to read (32 x 3584 x 3584: 9.4 us whole,
    15.4 us split four ways; at the former 1 us it split) and splits it where one tile's K is long and the tiles few
    (1 x 3584 x 18944: 41.3 us whole, 35.4 us split)."""
    src = """
target sm_90
family f8 {
  A = e4m3fn row  B = e4m3fn col  C = bf16 row  scale_a = tensor  scale_b = tensor
  tile = 64x128x128  waves = 1x4  lds_buffers = 4  schedule in [tile, splitk]
}
"""
    (t,) = tables(plan_all(load_text(src, "f8.ck")), [], "f8")
    assert choose(t, (32, 3584, 3584)).kernel.endswith("_scheduletile")
    assert choose(t, (100, 4608, 3584)).kernel.endswith("_scheduletile")
    assert choose(t, (1, 3584, 18944)).kernel.endswith("_schedulesplitk")


def test_model_charges_stream_k_its_split_tail_per_part():
    """Stream-K's last tiles, shared by S parts along K after its whole waves, cost STREAMK_TAIL_S plus each part's
    slot (tile M x N f32) read and zeroed by the finisher (measured on an H100: 14 us + 3.5 us per 96-KiB part,
    whatever K); a tail of whole tiles (S = 1) costs what the tile schedule's does, with no hand-off. 128x192 at
    M = 1000 on 132 workers: N = 5376 is 224 tiles (92 left after one wave: whole), N = 3456 is 144 (12 left: 11
    parts each)."""
    from ckgen.ops.gemm import cost_model as cm

    (tile, sk) = (plan_all([s], ("sm_90",))[0] for s in load_text(
        "kernel t { A = bf16 row B = bf16 col C = bf16 row tile = 128x192x64 waves = 2x4 lds_buffers = 4 }\n"
        "kernel s { A = bf16 row B = bf16 col C = bf16 row tile = 128x192x64 waves = 2x4 lds_buffers = 4 "
        "schedule = streamk }", "s.ck", ("sm_90",)))
    tt, ts = cm.traits(tile), cm.traits(sk)
    assert ts[13] == tt[13] == cm.LAUNCH_S  # (no split-K hand-off)
    whole = (1000, 5376, 3584)
    assert cm.estimate(ts, whole) == pytest.approx(cm.estimate(tt, whole))
    split = (1000, 3456, 3584)
    part = 128 * 192 * 4 / cm.FINISH_BYTES_PER_S
    no_tail = cm.estimate(ts[:22] + (0.0, 0.0), split)
    assert cm.estimate(ts, split) == pytest.approx(no_tail + cm.STREAMK_TAIL_S + 11 * part)
    assert cm.estimate(ts, split) > cm.estimate(tt, split)  # (measured: 84.2 us against the tile schedule's 59.1)


def test_model_reads_the_batch_of_batched_kernels_only():
    """Sizes past M, N, K are a batched kernel's batch; a block-scaled kernel's kb and nb are not (they were read as
    a batch of kb items: 112 at K = 14336, which hid split-K's advantage at decode shapes). The same in the C model
    (test_generated_c_chooses_like_python_and_runs compares the two)."""
    from ckgen.ops.gemm.cost_model import estimate, traits

    block, batched = (plan_all([s], ("sm_90",))[0] for s in load_text(
        "kernel b { A = e4m3fn row B = e4m3fn col C = bf16 row tile = 64x128x128 waves = 1x4 lds_buffers = 4 "
        "scale_a = block(128) scale_b = block(128) schedule = splitk }\n"
        "kernel m { A = bf16 row B = bf16 col C = bf16 row tile = 128x128x64 waves = 2x4 lds_buffers = 4 "
        "batched = true }", "m.ck", ("sm_90",)))
    tb, tm = traits(block), traits(batched)
    assert estimate(tb, (16, 4096, 14336, 112, 32)) == estimate(tb, (16, 4096, 14336))
    assert estimate(tm, (512, 4096, 4096, 8)) > 7 * estimate(tm, (512, 4096, 4096, 1))


def test_every_example_kernel_has_a_signature():
    """A family groups members by their op's signature (the ABI without its workspace): every example kernel has
    one, varlen attention's extents (total_q, total_k) included."""
    from pathlib import Path

    from ckgen import driver

    root = Path(__file__).resolve().parents[2]
    for spec in sorted((root / "examples").glob("*.ck")):  # (each for the targets it names; else gfx90a)
        for p in driver.plan(driver.load([spec], ("gfx90a",)))[spec.stem]:
            sig = get_op(p.op).signature(p.spec)
            assert db.signature_key(sig), p.name
