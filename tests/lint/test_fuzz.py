"""The analysis never crashes: random and mutated sources give findings or a clean AnalysisError.

Mutations of the fixture programs (deleted, duplicated, swapped or re-indented lines, inserted
tokens) keep most of the real structure while producing odd-but-valid and invalid programs.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from mcjax_lint.engine import ModuleSummary, analyze_project, summarize
from mcjax_lint.errors import AnalysisError
from mcjax_lint.model import Finding

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SOURCES = sorted(str(p) for p in FIXTURES.rglob("*.py"))
TOKENS = ["if jax.process_index() == 0:", "for x in set(y):", "return", "break", "continue", "raise",
          "try:", "except:", "finally:", "with ctx():", "else:", "elif x:", "lambda: (", ")", "]", "}", ":",
          "yield", "await", "match x:", "case _:", "del", "global g", "nonlocal n", "async def f():",
          "@jax.jit", "def", "class C:", "os.listdir(d)", "hash(s)", "train_step(s, b)", "sys.exit()",
          "jax.distributed.initialize()", "\t", "\\", "'''", '"', "#", "*", "**", ":=", "...", "pass"]

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(files: dict[str, str]) -> None:
    findings, errors = analyze_project(files)
    for f in findings:
        assert isinstance(f, Finding) and f.line >= 1 and f.code.startswith("MCJ")
    for e in errors:
        assert e.message


@st.composite
def mutated(draw):
    text = Path(draw(st.sampled_from(SOURCES))).read_text(encoding="utf-8")
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "indent", "dedent", "truncate"]))
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            line = lines[i]
            k = draw(st.integers(0, len(line)))
            lines[i] = line[:k] + " " + draw(st.sampled_from(TOKENS)) + " " + line[k:]
        elif op == "indent":
            lines[i] = "    " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i].lstrip()
        else:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return "\n".join(lines) + "\n"


@FAST
@given(mutated())
def test_mutated_fixtures_never_crash(source: str):
    _check({"mutant.py": source})


@FAST
@given(st.lists(st.sampled_from(TOKENS + ["x = 1", "f(x)", "    ", "\n"]), max_size=30).map(" ".join))
def test_token_soup_never_crashes(source: str):
    _check({"soup.py": source})


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_crashes(source: str):
    _check({"random.py": source})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_summaries_round_trip_through_json(source: str):
    try:
        s = summarize(source, "pkg/mod.py", "pkg.mod")
    except AnalysisError:
        return
    assert ModuleSummary.from_dict(json.loads(json.dumps(s.to_dict()))) == s


def test_unparsable_source_is_a_clean_error():
    findings, errors = analyze_project({"bad.py": "def f(:\n    pass\n", "ok.py": "x = 1\n"})
    assert findings == [] and len(errors) == 1 and errors[0].path == "bad.py"
    assert "syntax error" in errors[0].message


def test_a_non_printable_name_character_is_a_syntax_error_not_a_crash() -> None:
    # Found by the random-text test: U+13441 is refused by the host parser and by libcst's
    # node validation (CSTValidationError, not ParserSyntaxError).
    findings, errors = analyze_project({"odd.py": "x\U00013441 = 1\n"})
    assert findings == [] and len(errors) == 1 and "syntax error" in errors[0].message
