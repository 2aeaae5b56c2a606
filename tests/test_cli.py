"""The ``ckgen`` command end to end (rung 1: everything is compiled for the real AMD chips).

Compiles examples/ for gfx942 and gfx90a once per session, then checks the outputs, the manifest (with its
occupancy against clang's, for tests/toolchain/test_occupancy.py, which compiles the other arches),
``report`` against the code objects' metadata, and that bad input exits 2 with no traceback.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.toolchain.test_occupancy import CLI_ARCHES, check_against_clang

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").glob("*.ck"))


def ckgen(*args, cache: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, CKGEN_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))  # this checkout's ckgen
    return subprocess.run([sys.executable, "-m", "ckgen", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def compiled(tmp_path_factory, cache) -> Path:
    out = tmp_path_factory.mktemp("out")
    r = ckgen("compile", *EXAMPLES, "--arch", ",".join(CLI_ARCHES), "-o", out, "-j", "2", cache=cache)
    assert r.returncode == 0, r.stderr
    return out


def test_compile_writes_library_header_manifest(compiled):
    for ex in EXAMPLES:
        stem = Path(ex).stem
        assert (compiled / f"lib{stem}.so").stat().st_size > 0
        header = (compiled / f"{stem}.h").read_text()
        assert "int ckgen_status_string" not in header and "const char* ckgen_status_string(int status);" in header
    manifest = json.loads((compiled / "manifest.json").read_text())
    kernels = {k["name"]: k for k in manifest["kernels"]}
    # 22 GEMMs (4 scheduled; 2 in gemm_2waves.ck, 2 batched, 3 grouped, 2 fused: residual and SwiGLU), 3 attention,
    # 6 row ops, 5 MoE routing, 3 element-wise; llama_layer.ck: 2 norms (one rstd-only), two K/V appends (with and
    # without Q), attention with and without RoPE, 10 one-member GEMM families (their gfx942 blocks; the sm_90
    # blocks' members are pruned on AMD); gemm_fp8.ck: its 3 FNUZ kernels (gfx942; its gfx950 and sm_90 kernels are
    # not built for these arches)
    assert len(kernels) == 22 + 6 + 3 + 5 + 3 + 16 + 3
    fp8 = kernels["fp8_block_fnuz"]
    assert fp8["arches"] == ["gfx942"] and "const void* scale_a" in fp8["signature"] and "int64_t kb" in fp8["signature"]
    bmm = kernels["bmm_bf16"]  # the strided-batched example: the batch and a stride per operand in its ABI
    assert "int64_t batch" in bmm["signature"] and "int64_t stride_a" in bmm["signature"]
    k = kernels["gemm_f16_nt"]
    assert k["source"] == "examples/gemm_f16.ck" and k["arches"] == ["gfx942", "gfx90a"]
    assert k["signature"].startswith("int ckgen_gemm_f16_nt(const void* A, const void* B, void* C, const void* bias")
    assert k["parameters"]["params"]["config"]["tile"] == [128, 128, 32]
    for arch in ("gfx942", "gfx90a"):
        res = k["resources"][arch]
        assert res["vgpr_spills"] == 0 and res["sgpr_spills"] == 0 and res["scratch_bytes"] == 0
        assert res["lds_bytes"] == k["plans"][arch]["body"]["lds"]["total_bytes"]
    assert kernels["bf16_sweep_tile64x64x64_waves1x4"]["family"] == "bf16_sweep"
    ws = kernels["splitk_bf16"]["workspace"]  # a split-K kernel: its workspace, sized by a C function
    assert ws["symbol"] == "ckgen_splitk_bf16_workspace_bytes" and ws["args"] == ["M", "N", "K"]
    assert "splits" in ws["formula"]["gfx942"] and kernels["gemm_f16_nt"]["workspace"] is None


def test_no_spills_and_mfma_in_the_main_loop_for_every_example(compiled):
    manifest = json.loads((compiled / "manifest.json").read_text())
    for k in manifest["kernels"]:
        for arch, res in k["resources"].items():
            assert res["vgpr_spills"] == 0 and res["sgpr_spills"] == 0 and res["scratch_bytes"] == 0, (k["name"], arch)
            instr = k["plans"][arch]["body"].get("instruction")  # ops without matrix instructions have none
            if instr is None:
                assert res["mfma_total"] == 0, (k["name"], arch, res["mfma"])
                continue
            assert res["mfma"].get(instr["mnemonic"], 0) > 0 and res["mfma_in_main_loop"] > 0, (k["name"], arch, res["mfma"])


def test_occupancy_agrees_with_clang_for_every_example(compiled):
    """tests/toolchain/test_occupancy.py's cross-check with clang, on this compile's kernels (its arches are
    compiled here only)."""
    manifest = json.loads((compiled / "manifest.json").read_text())
    reports = [SimpleNamespace(**res) for k in manifest["kernels"] for res in k["resources"].values()]
    assert {r.arch for r in reports} == set(CLI_ARCHES)
    for r in reports:
        check_against_clang(r)


def test_two_waves_per_simd_on_gfx942(compiled):
    """examples/gemm_2waves.ck: 128x128x32 (2x2 waves, 32 KiB) and 256x128x32 (2x4 waves, 48 KiB), double
    buffered, run two waves per SIMD on gfx942 by the code object's own figures."""
    manifest = json.loads((compiled / "manifest.json").read_text())
    got = {k["name"]: SimpleNamespace(**k["resources"]["gfx942"]) for k in manifest["kernels"]
           if "gfx942" in k["resources"]}
    small, big = got["gemm_bf16_128x128"], got["gemm_f16_256x128"]
    assert (small.lds_bytes, small.workgroup_size) == (32768, 256)
    assert (big.lds_bytes, big.workgroup_size) == (49152, 512)
    for r in (small, big):
        assert r.waves_per_simd >= 2 and r.clang_occupancy >= 2, r
        assert r.vgpr_spills == r.sgpr_spills == r.scratch_bytes == 0
    # the shipped f16 workhorse too (it was LDS-bound at 1 with padded rows)
    assert got["gemm_f16_nt"].waves_per_simd == 2


def test_report_json_matches_the_code_object_metadata(cache):
    r = ckgen("report", "examples/gemm_f16.ck", "--arch", "gfx942", "--json", cache=cache)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    by_name = {k["name"]: k for k in rep["kernels"]}
    k = by_name["gemm_f16_nt"]
    assert k["mfma"] == {"v_mfma_f32_32x32x8_f16": 16} and k["mfma_in_main_loop"] == 16
    # unpadded, swizzled tiles: 2 buffers x (128 + 128) x 32 x 2 bytes
    assert k["lds_bytes"] == 32768 and k["workgroup_size"] == 256 and k["wavefront_size"] == 64
    assert 0 < k["vgprs"] <= 512 and k["sgprs"] > 0 and 1 <= k["waves_per_simd"] <= 8
    # 32 KiB of LDS per workgroup on a 64 KiB CU: two workgroups (8 waves, two per SIMD) per CU.
    assert k["waves_per_simd"] == 2 and k["occupancy_limiter"] == "lds"
    assert k["clang_occupancy"] == 2


def test_report_table(cache):
    r = ckgen("report", "examples/gemm_f32.ck", "--arch", "gfx90a", cache=cache)
    assert r.returncode == 0, r.stderr
    assert re.search(r"sgemm_nn\s+gfx90a\s+v_mfma_f32_16x16x4f32", r.stdout)


def test_emit_stages(cache):
    hip = ckgen("emit", "examples/gemm_f16.ck", "--arch", "gfx942", "--kernel", "gemm_f16_nt", cache=cache)
    assert hip.returncode == 0 and "__builtin_amdgcn_mfma_f32_32x32x8f16" in hip.stdout
    ir = ckgen("emit", "examples/gemm_f16.ck", "--arch", "gfx942", "--stage", "ir", cache=cache)
    plans = json.loads(ir.stdout)
    assert [p["spec"]["name"] for p in plans] == ["gemm_f16_nt", "mlp_f16_bias_gelu"]
    assert plans[0]["body"]["instruction"]["mnemonic"] == "v_mfma_f32_32x32x8_f16"
    bad = ckgen("emit", "examples/gemm_f16.ck", "--arch", "gfx942", "--kernel", "nope", cache=cache)
    assert bad.returncode == 2 and "no kernel named 'nope'" in bad.stderr and "gemm_f16_nt" in bad.stderr


@pytest.mark.parametrize("text,args,words", [
    ("kernel k { A = f16 row B = f16 col C = f16 row tile = 96x128x32 waves = 2x2 instr = 32x32x8 }",
     ["--arch", "gfx942"], "bad.ck:1:55: error: kernel 'k' on gfx942: tile = 96x128x32"),
    ("kernel k { A = f16 row", [], "bad.ck:1:23: error: unexpected end of file"),
    ("kernel k { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 1x1 }", ["--arch", "gfx1234"],
     "--arch gfx1234: unknown target"),
])
def test_check_errors_exit_2_without_traceback(tmp_path, cache, text, args, words):
    (tmp_path / "bad.ck").write_text(text)
    r = ckgen("check", "bad.ck", *args, cache=cache, cwd=tmp_path)
    assert r.returncode == 2
    assert words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_check_ok_and_missing_file(cache):
    ok = ckgen("check", *EXAMPLES, cache=cache)
    assert ok.returncode == 0 and "gemm_f16: 2 kernel(s), 4 plan(s)" in ok.stdout
    missing = ckgen("check", "nope.ck", cache=cache)
    assert missing.returncode == 2 and "nope.ck: no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_failed_compile_leaves_no_partial_outputs(tmp_path, cache):
    (tmp_path / "bad.ck").write_text("kernel k { A = f16 row B = f16 col C = f16 row tile = 64x64x32 waves = 9x9 }")
    r = ckgen("compile", "bad.ck", "--arch", "gfx942", "-o", tmp_path / "out", cache=cache, cwd=tmp_path)
    assert r.returncode == 2 and "waves = 9x9" in r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_usage_errors_exit_2(cache):
    r = ckgen("compile", "examples/gemm_f16.ck", cache=cache)
    assert r.returncode == 2 and "--arch" in r.stderr


def test_library_loads_without_a_gpu_and_reports_no_device(compiled):
    import ctypes

    lib = ctypes.CDLL(str(compiled / "libgemm_f16.so"))
    fn = lib.ckgen_gemm_f16_nt
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 6 + [ctypes.c_void_p]
    lib.ckgen_status_string.restype = ctypes.c_char_p
    buf = ctypes.create_string_buffer(64)
    p = ctypes.cast(buf, ctypes.c_void_p)
    assert fn(p, p, p, None, 4, 4, 4, 4, 4, 4, None) == 2  # CKGEN_ERROR_NO_DEVICE: this machine has no GPU
    assert b"no GPU device" in lib.ckgen_status_string(2)
    assert fn(None, p, p, None, 4, 4, 4, 4, 4, 4, None) == 1  # null A
    assert fn(p, p, p, None, 4, 4, 4, 2, 4, 4, None) == 1     # lda < K for row-major A
    assert fn(p, p, p, None, -1, 4, 4, 4, 4, 4, None) == 1    # negative M
    assert fn(p, p, p, None, 0, 4, 4, 4, 4, 4, None) == 0     # empty problem: nothing to do
    bias_fn = lib.ckgen_mlp_f16_bias_gelu
    bias_fn.argtypes = fn.argtypes
    assert bias_fn(p, p, p, None, 4, 4, 4, 4, 4, 4, None) == 1  # the kernel needs a bias


def test_compile_amd_and_nvidia_in_one_call(tmp_path, cache):
    import shutil

    if shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists():
        pytest.skip("nvcc is not installed")
    (tmp_path / "mix.ck").write_text("kernel mix_bf16 { A = bf16 row B = bf16 col C = bf16 row "
                                     "tile = 128x128x32 waves = 2x2 epilogue = bias(col) -> gelu }\n")
    r = ckgen("compile", "mix.ck", "--arch", "gfx942,sm_90", "-o", tmp_path / "out", cache=cache, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    libs = {lib["library"]: lib["arches"] for lib in manifest["libraries"]}
    assert libs == {"libmix.so": ["gfx942"], "libmix_cuda.so": ["sm_90"]}
    nv = next(k for k in manifest["kernels"] if k["library"] == "libmix_cuda.so")
    assert nv["plans"]["sm_90"]["body"]["instruction"]["shape"] == [16, 8, 16]
    # an AMD-only parameter that does not fit the NVIDIA target names the parameter
    (tmp_path / "amd.ck").write_text("kernel k { A = f16 row B = f16 col C = f16 row tile = 128x128x32 "
                                     "waves = 2x2 instr = 32x32x8 }\n")
    bad = ckgen("check", "amd.ck", "--arch", "sm_90", cache=cache, cwd=tmp_path)
    assert bad.returncode == 2 and "instr = 32x32x8" in bad.stderr and "legal: 16x8x16" in bad.stderr


def _actions(parser, path=("ckgen",)):
    """(command path, action) for every action of ``parser`` and of its subcommands, depth first."""
    import argparse

    for action in parser._actions:
        yield path, action
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), argparse.Action([], dest=name, help=helps.get(name))
                yield from _actions(sub, (*path, name))


def test_every_flag_argument_and_command_has_help():
    from ckgen import cli

    found = list(_actions(cli._parser()))
    assert len({p for p, _ in found}) >= 10  # the top level and every command
    missing = [" ".join(p) + " " + ("/".join(a.option_strings) or a.dest) for p, a in found
               if not (a.help or "").strip()]
    assert not missing, missing


def test_help_names_the_positional_arguments(cache):
    r = ckgen("compile", "-h", cache=cache)
    assert r.returncode == 0 and "the .ck files" in r.stdout
    r = ckgen("explain", "-h", cache=cache)
    assert "--family FAMILY" in r.stdout and "the family whose dispatcher" in r.stdout


def test_examples_prints_whole_descriptions(capsys):
    from ckgen import cli, examples

    assert cli.main(["examples"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for ex in examples.all_examples():
        assert ex.summary and ex.summary.endswith(".") and ex.summary in out, ex.path.name
    # a multi-line opening comment is kept whole
    summary = {e.path.name: e.summary for e in examples.all_examples()}["gemm_schedules.ck"]
    assert summary.endswith("picks its kernel by shape (docs/dispatch.md).")


def test_example_summary_forms():
    from ckgen.examples import _summary

    assert _summary("// one\n// two.\ntarget gfx942\n// later\n") == "one two."
    assert _summary("/* a\n * b. */\nkernel k {}") == "a b."
    assert _summary("target gfx942\n") == ""
