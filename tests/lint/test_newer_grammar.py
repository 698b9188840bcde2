"""Parsing does not depend on the host Python: a file in a newer grammar than the interpreter
running the linter (Python 3.12's `type` aliases, generic functions, PEP 701 f-strings under 3.11)
is summarised and analysed, through libcst's parser, and its hazards are reported."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import libcst as cst
import pytest

from mcjax_lint.analysis.cst_to_ast import to_ast
from mcjax_lint.engine import analyze_project, summarize

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
HAZARD = FIXTURES / "hazards" / "py312_syntax_leader_allgather.py"
BENIGN = FIXTURES / "benign" / "py312_syntax_gather_then_print.py"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the host's own parser reads 3.12 syntax")
def test_the_host_parser_refuses_the_fixture():
    with pytest.raises(SyntaxError):
        ast.parse(HAZARD.read_text(encoding="utf-8"))


def test_a_312_file_is_summarised_and_its_hazard_reported():
    text = HAZARD.read_text(encoding="utf-8")
    s = summarize(text, str(HAZARD), "py312_syntax_leader_allgather")  # (raised before)
    mod = "py312_syntax_leader_allgather"
    assert {f"{mod}.label", f"{mod}.report"} <= set(s.functions)
    assert s.functions[f"{mod}.report"].collective is not None
    findings, errors = analyze_project({str(HAZARD): text})
    assert errors == []
    assert [(f.line, f.code) for f in findings] == [(17, "MCJ101")]


def test_the_correct_312_look_alike_is_silent():
    findings, errors = analyze_project({str(BENIGN): BENIGN.read_text(encoding="utf-8")})
    assert (findings, errors) == ([], [])


@pytest.mark.parametrize("source", [
    "x = f'{a!r:>{w}}' 'tail' f\"{b}\"\n",
    "x = f'{a=} {b = !s} {c=:>3} \\n{{}}'\n",
    "def f(a, /, b=1, *c, d, e=2, **g) -> int:\n    return (yield from h(a[1:2, ::3], *c, **g))\n",
    "async def f():\n    async with a as (b, c):\n        async for x in y: del x, z[0]\n",
    "match p:\n    case [1, *rest] | {'k': v, **kw} if v: pass\n    case C(1, y=2) as z: pass\n    case None: pass\n",
    "try:\n    pass\nexcept* E as e:\n    raise X from e\nfinally:\n    pass\n",
    "class C(B, metaclass=M):\n    x: int = 1\n    y += {**d, 1: 2}\n    z = [i for i in r if i for j in i], {1, *s}, not a is not b\n",
])
def test_the_converted_tree_equals_the_hosts(source: str):
    """Where the host can parse a file, libcst's tree converted is the host's tree, node for node."""
    assert ast.dump(to_ast(cst.parse_module(source))) == ast.dump(ast.parse(source))


def test_a_file_no_grammar_accepts_is_still_an_error():
    _, errors = analyze_project({"bad.py": "def f(:\n    pass\n"})
    assert len(errors) == 1 and "syntax error" in errors[0].message


def test_nesting_beyond_the_hosts_limit_is_an_error_not_a_crash():
    """libcst's native parser overflows the C stack on nesting in the thousands: a 3.12 file
    nested deeper than the host's own limit (200 brackets) is refused, as the host refuses it."""
    deep = "type T = int\nx = " + "(" * 3000 + "1" + ")" * 3000 + "\n"
    findings, errors = analyze_project({"deep312.py": deep, "ok.py": "y = 2\n"})
    assert findings == [] and [e.path for e in errors] == ["deep312.py"]
