"""Helpers shared by the integration tests: build the CMake consumer example against a ckgen."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cmake"
NO_DEVICE = 2  # CKGEN_ERROR_NO_DEVICE


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None, check: bool = True,
        timeout: int = 600) -> subprocess.CompletedProcess:
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {res.returncode}\n{res.stdout}\n{res.stderr}")
    return res


def copy_example(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest)
    return dest


def configure(src: Path, build: Path, cmake_dir: str, env: dict | None = None,
              extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return run(["cmake", "-S", src, "-B", build, f"-Dckgen_DIR={cmake_dir}", *extra], env=env)


def build(build_dir: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    return run(["cmake", "--build", build_dir, "-j", "2"], env=env, check=check)


def env_with_cache(cache: Path, path_prefix: Path | None = None) -> dict:
    env = dict(os.environ)
    env["CKGEN_CACHE_DIR"] = str(cache)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
    return env
