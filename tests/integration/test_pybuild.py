"""examples/pybuild: a setuptools project that runs `ckgen compile` while its wheel is built.

The wheel must carry lib<stem>.so, <stem>.h and manifest.json inside the package, be tagged for the
platform, and its loader must reach the kernel (which returns CKGEN_ERROR_NO_DEVICE here).
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

from ..doc_snippets import snippets
from .cmake_util import NO_DEVICE, ROOT, env_with_cache, run

EXAMPLE = ROOT / "examples" / "pybuild"


def build_wheel(python: str, tmp: Path, env: dict) -> Path:
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src)  # building writes build/ and *.egg-info: keep them out of the checkout
    dist = tmp / "dist"
    run([python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", src, "-w", dist], cwd=tmp, env=env)
    wheels = list(dist.glob("gemm_kernels-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def check_wheel(wheel: Path, python: str, tmp: Path, env: dict) -> None:
    assert wheel.name.endswith(".whl") and "-py3-none-linux_" in wheel.name, wheel.name  # platform, not pure
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for f in ("gemm_kernels/__init__.py", "gemm_kernels/_lib/libmlp.so", "gemm_kernels/_lib/mlp.h",
                  "gemm_kernels/_lib/manifest.json"):
            assert f in names, sorted(names)
        manifest = json.loads(z.read("gemm_kernels/_lib/manifest.json"))
        header = z.read("gemm_kernels/_lib/mlp.h").decode()
        z.extractall(tmp / "site")
    assert sorted(k["name"] for k in manifest["kernels"]) == ["mlp_down_bf16", "mlp_up_f16"]
    assert "ckgen_mlp_up_f16(" in header and "ckgen_mlp_down_bf16(" in header
    probe = ("import gemm_kernels as g\n"
             "s = g.call('mlp_up_f16', 1, 2, 3, 4, 64, 64, 64, 64, 64, 64)\n"
             "print(s, g.status_string(s))\n")
    res = run([python, "-c", probe], cwd=tmp / "site", env=env)
    status, _, text = res.stdout.strip().partition(" ")
    assert int(status) == NO_DEVICE and "device" in text, res.stdout
    for doc in [s for s in snippets() if s.kind == "pybuild"]:  # docs/integration.md's, against this wheel
        out = run([python, "-c", doc.code], cwd=tmp / "site", env=env).stdout
        assert "['mlp_down_bf16', 'mlp_up_f16']" in out and "ckgen_mlp_up_f16(" in out, (doc.id, out)


def test_pybuild_wheel_ships_generated_kernels(tmp_path):
    env = env_with_cache(tmp_path / "cache")
    wheel = build_wheel(sys.executable, tmp_path, env)
    check_wheel(wheel, sys.executable, tmp_path, env)


def test_pybuild_build_fails_cleanly_on_a_bad_spec(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    (src / "kernels" / "mlp.ck").write_text("target gfx942\nkernel k { tile = 64x64 }\n")
    res = run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", src, "-w",
               tmp_path / "dist"], cwd=tmp_path, env=env_with_cache(tmp_path / "cache"), check=False)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "mlp.ck:2:" in out and "ckgen compile failed" in out, out
    assert not list((tmp_path / "dist").glob("*.whl"))  # no wheel without its kernels
