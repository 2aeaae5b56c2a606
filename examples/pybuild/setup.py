"""Build step: run `ckgen compile` on the specs listed in pyproject.toml and put lib<stem>.so, <stem>.h
and manifest.json into the package (gemm_kernels/_lib/) of the wheel being built.

The generation happens in build_py, so `pip wheel`, `pip install` and `python -m build` all run it; the
wheel is tagged for the platform (it holds a shared library) but not for a Python version or ABI.
"""

import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from wheel.bdist_wheel import bdist_wheel

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
CONFIG = tomllib.loads((HERE / "pyproject.toml").read_text())["tool"]["gemm-kernels"]


class build_py_with_kernels(build_py):
    def run(self):
        super().run()
        out = Path(self.build_lib) / "gemm_kernels" / "_lib"
        specs = [str(HERE / s) for s in CONFIG["specs"]]
        cmd = [sys.executable, "-m", "ckgen", "compile", *specs, "--arch", ",".join(CONFIG["archs"]), "-o", str(out)]
        self.announce("running " + " ".join(cmd), level=2)
        res = subprocess.run(cmd)
        if res.returncode != 0:
            raise SystemExit(f"ckgen compile failed (exit {res.returncode}); its errors are above")


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # a shared library inside: platlib, a platform tag


class platform_wheel(bdist_wheel):
    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


setup(distclass=BinaryDistribution, cmdclass={"build_py": build_py_with_kernels, "bdist_wheel": platform_wheel})
