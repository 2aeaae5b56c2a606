"""The element-wise op's DSL: the chain checked against the function table and the declared inputs, each refusal
pointing at the offending call; the plan's vector and workgroup choices; the function codes agree with the device
header's ``ew::Fn``."""

from __future__ import annotations

import re

import pytest

from ckgen.errors import CkgenError
from ckgen.frontend import load_text
from ckgen.lower import plan_kernel
from ckgen.ops.elementwise.fns import FNS
from ckgen.resources import OPS_DIR
from ckgen.targets import get_target


def spec(body: str):
    (s,) = load_text(f"target gfx942\nkernel k {{ op = elementwise {body} }}\n", "e.ck")
    return s


def refused(body: str) -> str:
    with pytest.raises(CkgenError) as ei:
        plan_kernel(spec(body), get_target("gfx942"))
    return ei.value.render()


def test_chains_become_steps():
    s = spec("a = bf16 b = bf16 expr = silu(a) -> mul(b)")
    assert [(x.fn, x.lhs, x.rhs) for x in s.params.steps] == [("silu", "a", "run"), ("mul", "run", "b")]
    s = spec("a = f32 y = f16 expr = mul(a, 0.5) -> add(-1.25)")
    assert [(x.fn, x.lhs, x.rhs, x.k) for x in s.params.steps] == [("mul", "a", "const", 0.5),
                                                                   ("add", "run", "const", -1.25)]
    assert s.params.y.value == "f16"


@pytest.mark.parametrize("body,words", [
    ("a = bf16 expr = sliu(a)", ["'sliu' is not a function", "did you mean 'silu'"]),
    ("a = bf16 expr = add(a)", ["add takes 2 operand(s) here", "the first call names all its operands"]),
    ("a = bf16 expr = silu(a) -> mul", ["mul takes 1 operand(s) here", "the value so far first"]),
    ("a = bf16 expr = add(a, b)", ["reads b, which the kernel does not declare"]),
    ("a = bf16 b = bf16 expr = silu(a)", ["does not read b, which the kernel declares"]),
    ("a = bf16 expr = add(1, 2)", ["at most one number per call"]),
    ("a = bf16 expr = neg(2)", ["reads no input"]),
    ("a = bf16 expr = mul(a, q)", ["'q' is neither an input nor a number"]),
    ("a = bf16 broadcast = b expr = silu(a)", ["the kernel declares no b"]),
    ("a = i8 expr = silu(a)", ["takes f16, bf16, f32"]),
    ("a = bf16 expr = mul(a, 1e39)", ["not a finite f32"]),
    ("a = bf16 expr = 3x4", ["expected a chain of calls"]),
    ("a = f32 vec = 8 expr = neg(a)", ["vec = 8", "legal: 1, 2, 4", "at most 16 bytes"]),
    ("a = bf16 vec = 3 expr = neg(a)", ["not a power of two"]),
    ("a = bf16 threads = 96 expr = neg(a)", ["threads = 96", "legal: 64, 128"]),
])
def test_refusals_point_at_the_problem(body, words):
    text = refused(body)
    assert text.startswith("e.ck:2:"), text
    for w in words:
        assert w in text, (w, text)


def test_vectors_are_16_bytes_of_the_widest_tensor():
    p = plan_kernel(spec("a = bf16 b = f32 y = bf16 expr = add(a, b)"), get_target("gfx942"))
    assert p.body.vec == 4 and p.launch.grid[0].per == 256 * 4 * 4
    p = plan_kernel(spec("a = f16 expr = neg(a) threads = 128 unroll = 4"), get_target("sm_90"))
    assert (p.body.vec, p.body.threads, p.body.unroll) == (8, 128, 4)


def test_broadcast_inputs_may_be_one_row_and_outputs_may_be_an_input():
    p = plan_kernel(spec("a = bf16 b = bf16 broadcast = b expr = add(a, b)"), get_target("gfx942"))
    b = next(x for x in p.abi.tensors if x.name == "b")
    y = next(x for x in p.abi.tensors if x.name == "y")
    assert b.broadcast == ("rows",) and y.aliases == ("a",)
    assert next(x for x in p.abi.tensors if x.name == "c").unused


def test_the_function_codes_match_the_device_header():
    text = (OPS_DIR / "elementwise" / "device" / "elementwise_expr.h").read_text()
    enum = re.search(r"enum Fn : int \{(.*?)\};", text, re.S).group(1)
    device = {name.lower(): int(code) for name, code in re.findall(r"k(\w+) = (\d+)", enum)}
    table = {n: f.code for n, f in FNS.items()}
    assert device == table
