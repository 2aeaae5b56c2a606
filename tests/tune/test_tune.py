"""``ckgen tune`` on the emulator (its mechanics: the same code runs on a GPU with --target sm_90): every member
checked against float64 before it is timed, one worker process per device, the database written atomically per
shape and resumed after an interruption, shape lists inline or from a file, clear errors."""

from __future__ import annotations

import io
import shutil

import pytest

from ckgen.backends import emu
from ckgen.cli import main
from ckgen.dispatch import db
from ckgen.dispatch.table import Table
from ckgen.errors import CkgenError
from ckgen.tune import runner, shapes
from ckgen.tune.measure import Job, Task, Worker

pytestmark = pytest.mark.skipif(not any(shutil.which(c) for c in emu.HOST_CXX_CANDIDATES), reason="no host clang++")

SRC = """
target gfx942
family tf {
  A = f16 row  B = f16 col  C = f16 row
  tile in [16x32x32]  waves = 1x2
  schedule in [tile, splitk]
}
"""


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    """One path for the module: the path is in the generated sources, so the kernels build once."""
    p = tmp_path_factory.mktemp("tune") / "tf.ck"
    p.write_text(SRC)
    return p


def test_tune_two_workers_then_resume(family, tmp_path):
    dbp = tmp_path / "db.jsonl"
    out = io.StringIO()
    s = runner.run(family, "tf", "emu", "gfx942", [(16, 64, 128), (5, 40, 300), (33, 17, 64)], dbp, reps=2,
                   inner=1, warmup=0, seed=0, devices=2, out=out)
    assert s.shapes == 3 and s.records == 6 and s.skipped == 0
    recs = db.read(dbp)
    assert len(recs) == 6 and all(r.data["status"] == "ok" and r.data["time_us"] > 0 for r in recs)
    assert {r.data["device_index"] for r in recs} <= {0, 1}
    r = recs[0].data
    assert r["device"] == "emu (gfx942)" and r["ckgen"] and r["rel_err"] <= r["tolerance"]
    assert "f16 row x f16 col -> f16 row" in r["summary"] and r["signature"]["gemm"]["a"]["dtype"] == "f16"
    text = out.getvalue()
    assert "[3/3]" in text and "rel. err" in text
    # an interrupted run: one shape's records lost; the next run measures that shape only
    db.write(dbp, [x for x in recs if x.data["shape"] != {"M": 5, "N": 40, "K": 300}])
    out = io.StringIO()
    s = runner.run(family, "tf", "emu", "gfx942", [(16, 64, 128), (5, 40, 300), (33, 17, 64)], dbp, reps=1,
                   inner=1, warmup=0, seed=0, devices=1, out=out)
    assert (s.shapes, s.skipped, len(db.read(dbp))) == (1, 2, 6)


def test_members_are_timed_in_the_cost_models_order(family, tmp_path):
    """One 16 x 32 tile with K = 8192: the model rates split-K far faster than one workgroup walking all of K, so
    split-K is timed first (the family lists the tile schedule first), and the slow members stop early."""
    dbp = tmp_path / "db.jsonl"
    runner.run(family, "tf", "emu", "gfx942", [(16, 32, 8192)], dbp, reps=1, inner=1, warmup=0, seed=0, devices=1,
               out=io.StringIO())
    assert [r.data["kernel"] for r in db.read(dbp)] == ["tf_tile16x32x32_schedulesplitk", "tf_tile16x32x32_scheduletile"]


def test_numerics_are_checked_before_timing(family, monkeypatch):
    from ckgen.ops.gemm import GemmOp

    monkeypatch.setattr(GemmOp, "tolerance", lambda self, plan, out: -1.0)  # nothing can pass
    w = Worker(Job(str(family), "tf", "emu", "gfx942", reps=1, inner=1, warmup=0, seed=0), 0)
    recs = w.run(Task((9, 40, 70), tuple(w.plans)))
    assert [r["status"] for r in recs] == ["numerics", "numerics"]
    assert all(r["time_us"] is None and r["reps"] == 0 and "over the tolerance" in r["error"] for r in recs)


def test_cli_tune_with_a_shape_file(family, tmp_path, capsys):
    sf = tmp_path / "shapes.txt"
    sf.write_text("# decode\n1x64x128   # M = 1\n\n16x64x128\n")
    dbp = tmp_path / "cli.jsonl"
    assert main(["tune", str(family), "--family", "tf", "--shapes-file", str(sf), "--db", str(dbp), "--reps", "1"]) == 0
    assert "2 shape(s) measured" in capsys.readouterr().out and len(db.read(dbp)) == 4
    assert main(["tune", str(family), "--family", "tf", "--shapes", "16x64x128", "--db", str(dbp)]) == 0
    assert "1 already recorded" in capsys.readouterr().out


@pytest.mark.parametrize("args,match", [
    (["--shapes", "1x2"], "expected MxNxK"),
    (["--shapes", ""], "no shapes given"),
    ([], "--shapes or --shapes-file"),
    (["--shapes", "1x2x3", "--reps", "0"], "--reps 0"),
    (["--shapes", "1x2x3", "--target", "sm_99"], "neither a backend nor a known arch"),
])
def test_cli_tune_errors(family, tmp_path, capsys, args, match):
    rc = main(["tune", str(family), "--family", "tf", "--db", str(tmp_path / "x.jsonl"), *args])
    assert rc == 2 and match in capsys.readouterr().err


def test_shape_file_errors(tmp_path):
    table = Table("t", "t", "gemm", "gfx942", {}, ("M", "N", "K"), ())
    p = tmp_path / "s.txt"
    p.write_text("1x2x3\n4x5\n")
    with pytest.raises(CkgenError, match="s.txt:2: shape '4x5'"):
        shapes.read_file(p, table)
    assert shapes.parse_list("1x2x3, 1x2x3,4x5x6", table) == [(1, 2, 3), (4, 5, 6)]


def test_block_scaled_shapes_need_only_m_n_k(tmp_path, capsys):
    """A block-scaled family's sizes end in its scales' block counts (kb, nb); a shape of M x N x K derives them."""
    p = tmp_path / "b.ck"
    p.write_text("target gfx942\nfamily fb {\n  A = e4m3fnuz row  B = e4m3fnuz col  C = bf16 row  "
                 "scale_a = block(128)  scale_b = block(128)\n  tile = 64x64x128  waves = 2x2  schedule in [tile, splitk]\n}\n")
    assert main(["explain", str(p), "--family", "fb", "--shape", "5x130x300", "--arch", "gfx942"]) == 0
    assert "5x130x300x3x2:" in capsys.readouterr().out


@pytest.mark.parametrize("body", [
    "A = bf16 row B = bf16 col C = bf16 row beta = 0.5 epilogue = bias(col) -> gelu",
    "A = f16 col B = f16 row C = f32 col epilogue = bias(row) -> silu",
    "A = i8 row B = i8 col C = i8 row",
])
def test_gpu_inputs_and_reference_agree_with_numpy(body):
    """What tune uses on a GPU (device tensors laid out by the ABI, the float64 reference on the device), run on
    the CPU here: the same values as the numpy reference of the same inputs."""
    torch = pytest.importorskip("torch")
    import numpy as np

    from ckgen.frontend import load_text
    from ckgen.ir.registry import get_op
    from ckgen.lower import plan_kernel
    from ckgen.tune.measure import to_host, torch_inputs

    (spec,) = load_text(f"kernel k {{ {body} tile = 64x64x32 waves = 2x2 }}", "k.ck", ("gfx942",))
    plan = plan_kernel(spec, "gfx942")
    sizes = {"M": 33, "N": 20, "K": 47}
    arrays = torch_inputs(plan, sizes, seed=1, device="cpu")
    assert arrays["A"].shape == (33, 47) and arrays["B"].shape == (47, 20)
    assert (arrays["A"].stride(1) == 1) == (plan.spec.params.gemm.a.layout.value == "row")
    op = get_op("gemm")
    got = op.reference_torch(plan, arrays, sizes)["C"].numpy()
    host = {k: (to_host(v) if v is not None else None) for k, v in arrays.items()}
    want = op.reference(plan, host, sizes)["C"]
    assert got.dtype == np.float64 and np.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert isinstance(torch.zeros(1), torch.Tensor)


def test_cuda_timing_cycles_through_copies_of_the_inputs_past_the_l2():
    from ckgen.tune.measure import MAX_COPIES, ROTATE_BYTES, rotation_copies

    assert rotation_copies(4096 * 4096 * 2 + 4096 * 2) == 6      # M = 1 x a 4096 x 4096 bf16 weight (32 MiB)
    assert rotation_copies(int(ROTATE_BYTES) + 1) == 1           # large shapes: the inputs alone pass the L2
    assert rotation_copies(0) == rotation_copies(1) == MAX_COPIES
    assert all(rotation_copies(b) * b >= ROTATE_BYTES or rotation_copies(b) == MAX_COPIES
               for b in (10**6, 3 * 10**7, 10**8))
