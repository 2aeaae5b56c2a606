"""A token-level fuzz of the DSL front end and the ``ckgen`` command: every bad text gets a located error, never a
traceback, and a failed ``compile`` leaves no files behind.

Usage::

    PYTHONPATH=. python3 tools/fuzz_dsl.py [--seed N] [--budget SECONDS] [--count N] [--save DIR] [-v]

``--seed`` makes the run deterministic (the same texts in the same order; default 0); ``--budget`` stops after
that many seconds (default 60), ``--count`` after that many texts (default: no limit); ``--save DIR`` writes each
failing text (the first of its kind) there; ``--minimize`` also shrinks it, token by token, to a smaller text that
fails the same way. The exit status is 1 when a failure was found, else 0.

What it mutates: the texts of ``examples/*.ck`` and ``bench/*.ck``, cut into tokens (names, numbers, dims,
punctuation, comments, white space). Each text gets one to three of these mutations (``MUTATIONS``): delete a
token, duplicate one, swap two adjacent ones, replace one with a token from elsewhere in the corpus (keywords,
operators, numbers, names, braces), insert punctuation, truncate the file, join two kernels' bodies, repeat a
kernel's name, unbalance a brace / bracket / parenthesis, very long names and numbers (``10**400``, ``1e999``,
``-0``, ``0x10``, ``1_000`` ...), unicode (non-ASCII names, a zero-width space, NUL bytes, CRLF line ends, a BOM,
tabs, bytes that are not UTF-8), a comment that never closes, and ``family ... in [...]`` lists that are empty or
nested.

What runs on each text, in this process (``ckgen.cli.main``), with the compilers pointed at a missing path and a
fresh build cache (so nothing is built): ``ckgen check F``, ``ckgen explain F --kernel K`` (a kernel of the
text), ``ckgen explain F --family X --shape S`` when the text has a family, ``ckgen emit F --stage S`` (spec, ir,
hip, host or header: the generated sources, without building) and ``ckgen compile F -o DIR``.

What counts as a failure:

- ``traceback``: exit 3 (an internal error) or an exception out of ``main``;
- ``exit``: an exit status other than 0, 2 and 4 (docs/reference.md, "Exit codes");
- ``unlocated``: exit 2 with an ``error:`` line that has neither ``file:line:col`` nor the file's name, nor a
  command-line flag or the value given to one (``shape 'abc': ...``), nor a parameter with its legal values
  (``note: legal: ...``);
- ``misplaced``: a ``file:line:col`` outside the text, or a source line under the message that is not that line;
- ``partial``: a failed ``compile`` that left a file in its output directory;
- ``hang``: a command that took longer than ``--timeout`` seconds.

Failures are grouped by kind, command and where they came from (the last ckgen frame of the traceback, or the
message with its numbers and quoted words blanked), and each group is reported once with its first text.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import re
import signal
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_GLOBS = ("examples/*.ck", "bench/*.ck")

_TOKEN = re.compile(r"""(?P<comment>//[^\n]*|\#[^\n]*|/\*.*?\*/)
                      |(?P<ws>\s+)
                      |(?P<dims>[+-]?\d+(?:x[+-]?\d+)+)
                      |(?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
                      |(?P<arrow>->)
                      |(?P<name>[A-Za-z_]\w*)
                      |(?P<punct>.)""", re.X | re.S)
KEYWORDS = ("kernel", "family", "target", "in", "op", "row", "col", "true", "false")
PUNCT = "{}[]();,=-><.:+*/\\@!?$%^&|~`'\""
ODD_NUMBERS = ("1" + "0" * 400, "1e999", "-1e999", "1e-999", "-0", "-0.0", "0x10", "1_000", "0b11", "0o7", "1e",
               "9" * 5000, "0000000001", "+5", ".5", "5.", "1.5e+308", "nan", "inf", "-inf", "2**31",
               "1" + "0" * 400 + "x1x1", "1x1x" + "9" * 4400, "-0x-0x-0", "4294967296", "2147483648",
               "1e38", "3.5e38", "1e-45", "0.1e1", "1e+0001")
ODD_NAMES = ("a" * 10000, "k" * 201, "kernel", "family", "target", "in", "_", "__init__", "main", "ckgen_x",
             "x_cfg", "hipX", "nvX", "int", "k\u00e9", "\u044f\u0434\u0440\u043e", "\u6838", "K\u0301",
             "\u0131n", "A\u200b", "row_", "col1", "stream")
UNICODE = ("\u200b", "\0", "\ufeff", "\t", "\u00a0", "\u2028", "\u0301", "\U0001f600", "\u00e9", "\u00d7",
           "\u2192", "\u2212", "\uff1d", "\r", "\x1b[31m", "\x0c", "\x7f")


@dataclass
class Text:
    """A text as tokens (kind, text); the significant ones are all but white space and comments."""

    tokens: list[tuple[str, str]]

    @classmethod
    def of(cls, source: str) -> Text:
        return cls([(m.lastgroup or "punct", m.group()) for m in _TOKEN.finditer(source)])

    def str(self) -> str:
        return "".join(t for _, t in self.tokens)

    def significant(self) -> list[int]:
        return [i for i, (k, _) in enumerate(self.tokens) if k not in ("ws", "comment")]


@dataclass
class Corpus:
    texts: list[tuple[str, str]]                    # (name, text)
    pool: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path = ROOT) -> Corpus:
        texts = [(str(p.relative_to(root)), p.read_text()) for g in CORPUS_GLOBS for p in sorted(root.glob(g))]
        pool: dict[str, set[str]] = {}
        for _, text in texts:
            for kind, tok in Text.of(text).tokens:
                if kind not in ("ws", "comment"):
                    pool.setdefault(kind, set()).add(tok)
        pool.setdefault("name", set()).update(KEYWORDS)
        return cls(texts, {k: sorted(v) for k, v in pool.items()})


# ---- mutations: (rng, text, corpus) -> new source -------------------------------------------------------------

def _pick(rng: random.Random, t: Text) -> int | None:
    sig = t.significant()
    return rng.choice(sig) if sig else None


def m_delete(rng, t, c):
    i = _pick(rng, t)
    if i is not None:
        del t.tokens[i]
    return t.str()


def m_duplicate(rng, t, c):
    i = _pick(rng, t)
    if i is not None:
        t.tokens.insert(i + 1, t.tokens[i])
        t.tokens.insert(i + 1, ("ws", rng.choice(("", " ", "\n"))))
    return t.str()


def m_swap(rng, t, c):
    sig = t.significant()
    if len(sig) > 1:
        j = rng.randrange(len(sig) - 1)
        a, b = sig[j], sig[j + 1]
        t.tokens[a], t.tokens[b] = t.tokens[b], t.tokens[a]
    return t.str()


def m_replace(rng, t, c):
    i = _pick(rng, t)
    if i is not None:
        kind = rng.choice(sorted(c.pool))
        t.tokens[i] = (kind, rng.choice(c.pool[kind]))
    return t.str()


def m_insert_punct(rng, t, c):
    i = rng.randrange(len(t.tokens) + 1)
    t.tokens.insert(i, ("punct", "".join(rng.choice(PUNCT) for _ in range(rng.choice((1, 1, 2, 3))))))
    return t.str()


def m_truncate(rng, t, c):
    s = t.str()
    return s[:rng.randrange(len(s) + 1)]


_BLOCK = re.compile(r"\b(kernel|family)\s+(\w+)\s*\{")


def _blocks(s: str) -> list[tuple[int, int, int, str]]:
    """(start, body start, body end, name) of each block, by brace matching."""
    out = []
    for m in _BLOCK.finditer(s):
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {"{": 1, "}": -1}.get(s[j], 0)
            j += 1
        out.append((m.start(), m.end(), j - 1, m.group(2)))
    return out


def m_join_bodies(rng, t, c):
    s = t.str()
    blocks = _blocks(s)
    if not blocks:
        return s
    donor = rng.choice(c.texts)[1] if rng.random() < 0.5 else s
    pieces = _blocks(donor)
    if not pieces:
        donor, pieces = s, blocks
    _, b0, b1, _ = rng.choice(pieces)
    body = donor[b0:b1]
    _, start, end, _ = rng.choice(blocks)
    if rng.random() < 0.5:  # both bodies in one block
        return s[:end] + "\n" + body + s[end:]
    return s[:start] + body + s[end:]  # the body replaced by another's


def m_repeat_name(rng, t, c):
    s = t.str()
    blocks = _blocks(s)
    if len(blocks) < 2:
        names = [b[3] for b in _blocks(rng.choice(c.texts)[1])] or ["k"]
        return s + f"\nkernel {rng.choice(names)} {{ op = gemm }}\n"
    a, b = rng.sample(blocks, 2)
    m = _BLOCK.match(s, b[0])
    return s[:m.start(2)] + a[3] + s[m.end(2):]


def m_unbalance(rng, t, c):
    s = t.str()
    spots = [i for i, ch in enumerate(s) if ch in "{}[]()"]
    if spots and rng.random() < 0.5:
        i = rng.choice(spots)
        return s[:i] + s[i + 1:]
    i = rng.randrange(len(s) + 1)
    return s[:i] + rng.choice("{}[]()") * rng.choice((1, 1, 2, 50)) + s[i:]


def m_long_token(rng, t, c):
    nums = [i for i, (k, _) in enumerate(t.tokens) if k in ("number", "dims")]
    names = [i for i, (k, _) in enumerate(t.tokens) if k == "name"]
    if nums and (rng.random() < 0.6 or not names):
        t.tokens[rng.choice(nums)] = ("number", rng.choice(ODD_NUMBERS))
    elif names:
        t.tokens[rng.choice(names)] = ("name", rng.choice(ODD_NAMES))
    return t.str()


def m_unicode(rng, t, c):
    s = t.str()
    r = rng.random()
    if r < 0.15:
        return s.replace("\n", "\r\n")
    if r < 0.25:
        return "\ufeff" + s
    if r < 0.35:
        return s.replace("  ", "\t")
    if r < 0.45:
        return s.replace("\n", "\r")
    i = rng.randrange(len(s) + 1)
    return s[:i] + rng.choice(UNICODE + ("\udcff",)) + s[i:]  # \udcff: a byte 0xff that is not UTF-8


def m_open_comment(rng, t, c):
    s = t.str()
    i = rng.randrange(len(s) + 1)
    return s[:i] + rng.choice(("/*", "/* never closed", "*/", "/*/", "/", "/* a */ */", "/**")) + s[i:]


_CHOICE = re.compile(r"(\w+)\s+in\s+\[")
_ASSIGN = re.compile(r"(\w+)\s*=\s*([^\s\[\]{}]+)")


def m_family_list(rng, t, c):
    s = t.str()
    lists = list(_CHOICE.finditer(s))
    forms = ("[]", "[,]", "[[]]", "[[{v}]]", "[{v}, [{v}]]", "[{v},,{v}]", "[[{v}, {v}], {v}]", "[" * 60 + "]" * 60,
             "[{v}", "[ ]", "[" * 3000 + "]" * 3000)
    if lists and rng.random() < 0.6:
        m = rng.choice(lists)
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {"[": 1, "]": -1}.get(s[j], 0)
            j += 1
        first = s[m.end():j - 1].split(",")[0].strip() or "1"
        return s[:m.end() - 1] + rng.choice(forms).replace("{v}", first) + s[j:]
    assigns = list(_ASSIGN.finditer(s))
    if not assigns:
        return s
    m = rng.choice(assigns)
    new = f"{m.group(1)} in " + rng.choice(forms).replace("{v}", m.group(2))
    s = s[:m.start()] + new + s[m.end():]
    return s.replace("kernel ", "family ", 1) if rng.random() < 0.7 else s


def m_splice(rng, t, c):
    s = t.str()
    other = rng.choice(c.texts)[1]
    a = rng.randrange(len(other) + 1)
    piece = other[a:a + rng.randrange(1, 200)]
    i = rng.randrange(len(s) + 1)
    return s[:i] + piece + s[i:]


MUTATIONS = {"delete": m_delete, "duplicate": m_duplicate, "swap": m_swap, "replace": m_replace,
             "insert_punct": m_insert_punct, "truncate": m_truncate, "join_bodies": m_join_bodies,
             "repeat_name": m_repeat_name, "unbalance": m_unbalance, "long_token": m_long_token,
             "unicode": m_unicode, "open_comment": m_open_comment, "family_list": m_family_list,
             "splice": m_splice}


def mutate(rng: random.Random, corpus: Corpus) -> tuple[str, str, list[str]]:
    """(source name, mutated text, the mutations applied)."""
    name, s = rng.choice(corpus.texts)
    applied = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        key = rng.choice(sorted(MUTATIONS))
        s = MUTATIONS[key](rng, Text.of(s), corpus)
        applied.append(key)
    return name, s, applied


# ---- running the command on a text ---------------------------------------------------------------------------

class _Timeout(BaseException):  # not an Exception: main() must not turn it into an internal error
    pass


def _on_alarm(signum, frame):
    raise _Timeout


@dataclass
class Run:
    command: str
    rc: int
    err: str
    seconds: float


def run_cli(argv: list[str], timeout: float) -> Run:
    """``ckgen.cli.main(argv)`` in this process; rc -1 for an exception out of it, -2 for a timeout."""
    import traceback

    from ckgen.cli import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except _Timeout:
        rc = -2
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # noqa: BLE001 - the finding itself
        rc = -1
        err.write(traceback.format_exc())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return Run(argv[0], rc, err.getvalue(), time.perf_counter() - t0)


_HEAD = re.compile(r"^(?:(\S[^\n]*?): )?error: (.*)$")
_FRAME = re.compile(r'File "[^"]*?(ckgen/[^"]+)", line (\d+), in (\w+)')


def _blank(message: str) -> str:
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", "Q", message))[:120]


def _given(message: str, args: list[str]) -> bool:
    """Whether ``message`` quotes a value given on the command line (or one of its comma-separated parts)."""
    return any(q and any(q in a.split(",") or q == a for a in args) for q in re.findall(r"'([^']*)'", message))


def _misplaced(where: str, shown: str, text: str) -> str | None:
    """Why the place ``where`` (``line:col``) of a located error, and the source line ``shown`` under it, do not
    fit ``text`` (lines as an editor counts them), or None."""
    lines = re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff"))
    line, col = map(int, where.split(":"))
    if not 1 <= line <= len(lines) or not 1 <= col <= len(lines[line - 1]) + 1:
        return "a place outside the text"
    expected = lines[line - 1]
    plain = len(expected) <= 240 and not any(unicodedata.category(c) == "Cc" and c != "\t" for c in expected)
    if plain and shown.startswith("    ") and shown != "    " + expected:
        return "the wrong source line under the message"
    return None


def classify(r: Run, path: Path, argv: list[str] = (), text: str = "") -> tuple[str, str]:
    """(kind, signature): kind ``ok`` / ``error`` (a located or named error) or a failure kind (module doc)."""
    if r.rc == -2:
        return "hang", "hang"
    if r.rc in (3, -1):
        frames = _FRAME.findall(r.err)
        last = next((x for x in reversed(r.err.splitlines()) if x and not x.startswith(" ")), "")
        where = f"{frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}" if frames else "?"
        return "traceback", f"{where}: {_blank(last)}"
    if r.rc not in (0, 2, 4):
        return "exit", f"exit {r.rc}"
    if "Traceback" in r.err:
        return "traceback", "a traceback in a handled error"
    if r.rc != 2:
        return ("ok" if r.rc == 0 else "error"), ""
    lines = r.err.split("\n")  # not splitlines: a source line shown may hold a form feed or U+2028
    heads = [(i, m) for i, line in enumerate(lines) if (m := _HEAD.match(line))]
    if not heads:
        return "unlocated", _blank(lines[0] if lines else "(no message)")
    for i, m in heads:
        where, message = m.group(1) or "", m.group(2)
        note = next((line for line in lines[i + 1:i + 4] if line.startswith("note:")), "")
        place = re.fullmatch(re.escape(str(path)) + r":(\d+:\d+)", where)
        bad = place and text and _misplaced(place.group(1), lines[i + 1] if i + 1 < len(lines) else "", text)
        if bad:
            return "misplaced", bad
        if (re.fullmatch(re.escape(str(path)) + r":\d+:\d+", where) or path.name in message or "--" in message
                or note.startswith("note: legal:") or _given(message, argv[2:])):
            continue
        return "unlocated", _blank(message)
    return "error", ""


_SHAPES = ("16x128x64", "1x4096x4096", "7", "0x0x0", "abc", "1x2x3x4x5x6", "99999999999x1x1", "", "4x4x4,8x8x8")


def commands(rng: random.Random, text: str, path: Path, out_dir: Path) -> list[list[str]]:
    blocks = [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]
    kernels = [n for k, n in blocks if k == "kernel"] or ["k"]
    families = [n for k, n in blocks if k == "family"]
    cmds = [["check", str(path)], ["explain", str(path), "--kernel", rng.choice(kernels)],
            ["emit", str(path), "--stage", rng.choice(("spec", "ir", "hip", "host", "header"))],
            ["compile", str(path), "-o", str(out_dir), "-j", "1"]]
    if families:
        cmds.append(["explain", str(path), "--family", rng.choice(families), "--shape", rng.choice(_SHAPES)])
    return cmds


def _leftovers(out_dir: Path) -> list[str]:
    return sorted(str(p.relative_to(out_dir)) for p in out_dir.rglob("*") if not p.is_dir())


def _clear(out_dir: Path) -> None:
    import shutil

    shutil.rmtree(out_dir, ignore_errors=True)


def run_text(text: str, path: Path, argv: list[str], timeout: float) -> tuple[str, str, Run]:
    """Write ``text`` to ``path``, run one command on it and classify the outcome."""
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    r = run_cli(argv, timeout)
    kind, sig = classify(r, path, argv, text)
    if argv[0] == "compile":
        out_dir = Path(argv[argv.index("-o") + 1])
        left = _leftovers(out_dir) if out_dir.exists() else []
        if r.rc != 0 and left and kind in ("ok", "error"):
            kind, sig = "partial", f"left {', '.join(left[:3])}"
        _clear(out_dir)
    return kind, sig, r


@dataclass
class Failure:
    kind: str
    command: list[str]
    signature: str
    source: str
    mutations: list[str]
    text: str
    err: str
    count: int = 1


@dataclass
class Report:
    texts: int = 0
    runs: int = 0
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)
    mutations: dict[str, int] = field(default_factory=dict)
    failures: dict[tuple[str, str, str], Failure] = field(default_factory=dict)


@contextlib.contextmanager
def sandbox():
    """A temporary directory as the build cache, and every compiler a missing path (nothing is built); the
    environment and ckgen's settings are restored afterwards."""
    from ckgen import config

    keys = ("CKGEN_CLANG", "CKGEN_HIPCC", "CKGEN_NVCC", "CKGEN_HOST_CXX", "CKGEN_CACHE_DIR", "CKGEN_NO_CACHE")
    saved = {k: os.environ.get(k) for k in keys}
    with tempfile.TemporaryDirectory(prefix="ckgen-fuzz-") as tmp:
        missing = str(Path(tmp) / "no-such-compiler")
        os.environ.update(CKGEN_CLANG=missing, CKGEN_HIPCC=missing, CKGEN_NVCC=missing, CKGEN_HOST_CXX=missing,
                          CKGEN_CACHE_DIR=str(Path(tmp) / "cache"), CKGEN_NO_CACHE="1")
        config.reload()
        try:
            yield Path(tmp)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            config.reload()


def fuzz(seed: int = 0, budget: float = 60.0, count: int | None = None, timeout: float = 30.0,
         corpus: Corpus | None = None, log=None) -> Report:
    """Mutate and run texts until ``budget`` seconds or ``count`` texts; the failures, grouped."""
    rng = random.Random(seed)
    corpus = corpus or Corpus.load()
    rep = Report()
    t0 = time.perf_counter()
    with sandbox() as tmp:
        path, out_dir = tmp / "fz.ck", tmp / "out"
        while time.perf_counter() - t0 < budget and (count is None or rep.texts < count):
            source, text, applied = mutate(rng, corpus)
            rep.texts += 1
            for m in applied:
                rep.mutations[m] = rep.mutations.get(m, 0) + 1
            for argv in commands(rng, text, path, out_dir):
                kind, sig, r = run_text(text, path, argv, timeout)
                rep.runs += 1
                rep.kinds[kind] = rep.kinds.get(kind, 0) + 1
                if kind in ("ok", "error"):
                    continue
                key = (kind, argv[0], sig)
                if key in rep.failures:
                    rep.failures[key].count += 1
                    continue
                shown = [{str(path): "F.ck", str(out_dir): "OUT"}.get(a, a) for a in argv]
                rep.failures[key] = Failure(kind, shown, sig, source, applied, text, r.err)
                if log:
                    log(f"[{rep.texts}] {kind} in {' '.join(shown)}: {sig} ({source}, {'+'.join(applied)})")
    rep.seconds = time.perf_counter() - t0
    return rep


def minimize(f: Failure, timeout: float = 30.0, tries: int = 600) -> str:
    """A smaller text that fails like ``f``: whole lines, then single tokens, dropped while it still does."""
    with sandbox() as tmp:
        path = tmp / "fz.ck"
        argv = [{"F.ck": str(path), "OUT": str(tmp / "out")}.get(a, a) for a in f.command]

        def same(text: str) -> bool:
            kind, sig, _ = run_text(text, path, argv, timeout)
            return (kind, sig) == (f.kind, f.signature)

        best, n = f.text, 0
        for unit in ("line", "token"):
            i = 0
            while n < tries:
                parts = best.splitlines(keepends=True) if unit == "line" else [t for _, t in Text.of(best).tokens]
                if i >= len(parts):
                    break
                candidate = "".join(parts[:i] + parts[i + 1:])
                n += 1
                if same(candidate):
                    best = candidate
                else:
                    i += 1
        return best


def _main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds (default 60)")
    ap.add_argument("--count", type=int, default=None, help="stop after this many texts")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds one command may take (default 30)")
    ap.add_argument("--save", type=Path, help="write each failure's text (and minimized text) here")
    ap.add_argument("--minimize", action="store_true", help="shrink each failing text")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each new failure as it is found")
    a = ap.parse_args(argv)
    rep = fuzz(a.seed, a.budget, a.count, a.timeout, log=(lambda s: print(s, flush=True)) if a.verbose else None)
    print(f"seed {a.seed}: {rep.texts} texts, {rep.runs} commands in {rep.seconds:.0f} s")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.kinds.items())))
    print("mutations: " + ", ".join(f"{k} {v}" for k, v in sorted(rep.mutations.items())))
    for n, f in enumerate(rep.failures.values()):
        small = minimize(f, a.timeout) if a.minimize else f.text
        print(f"\n#{n} {f.kind} x{f.count}: ckgen {' '.join(f.command)}\n  {f.signature}\n"
              f"  from {f.source} by {'+'.join(f.mutations)}\n  text: {small[:400]!r}\n"
              + "".join(f"  | {line}\n" for line in f.err.splitlines()[-12:]))
        if a.save:
            a.save.mkdir(parents=True, exist_ok=True)
            (a.save / f"{n}_{f.kind}.ck").write_bytes(f.text.encode("utf-8", "surrogateescape"))
            if a.minimize:
                (a.save / f"{n}_{f.kind}.min.ck").write_bytes(small.encode("utf-8", "surrogateescape"))
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(_main())
