"""What builds report: progress lines, commands with -v, warnings (to the stream, or as Python warnings)."""

from __future__ import annotations

import io
import sys

import pytest

from ckgen import progress
from ckgen.errors import BuildError
from ckgen.toolchain.tools import run_tool, tool_version


def test_progress_lines_and_commands():
    out = io.StringIO()
    with progress.reporting(progress.Reporter(out, progress=True)):
        steps = progress.Steps(2)
        steps.finish("k", "gfx942", False, 1.234)
        steps.finish("k", "gfx90a", True, 0.0)
        progress.current().command(["clang++", "a b.cpp"])
    assert out.getvalue().splitlines() == ["[1/2] k gfx942 (built 1.2 s)", "[2/2] k gfx90a (cached)"]
    with progress.reporting(progress.Reporter(out, verbose=True)):
        progress.current().command(["clang++", "a b.cpp"], cwd="/tmp/x y")
    assert out.getvalue().splitlines()[-1] == "$ cd '/tmp/x y' && clang++ 'a b.cpp'"


def test_tool_warnings_are_reported_and_failures_carry_the_log():
    out = io.StringIO()
    with progress.reporting(progress.Reporter(out)):
        run_tool([sys.executable, "-c", "import sys; sys.stderr.write('x.cpp:1: warning: careful\\n')"], "compiling x",
                 warn=True)
        with pytest.raises(BuildError) as ei:
            run_tool([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"], "compiling y")
    assert out.getvalue() == "warning: compiling x:\nx.cpp:1: warning: careful\n"
    assert "compiling y failed (exit 3)" in ei.value.render() and "boom" in ei.value.render()


def test_without_a_reporter_warnings_are_python_warnings():
    with pytest.warns(progress.CkgenWarning, match="careful"):
        run_tool([sys.executable, "-c", "import sys; sys.stderr.write('careful')"], "compiling z", warn=True)


def test_tool_version_is_asked_once_and_none_for_a_missing_tool(tmp_path):
    assert tool_version(str(tmp_path / "missing")) is None
    assert tool_version(sys.executable).startswith("Python 3")
