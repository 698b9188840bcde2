"""The two passes agree: what the summary pass claims about a function is never less than what
the precise pass finds in it.

The summary pass (stdlib `ast`, every file) decides which files the precise pass (libcst) reads
at all, and what other files learn about a function; a fact it misses is a finding lost without
a trace. On every lint fixture, the precise pass is run on every file (the prefilter bypassed) and,
for each function:

- a collective call it finds there: the summary claims the function does collective work;
- a process-dependent source, a set/listing order or a string hash it finds there, first made in
  that function: the summary claims the function touches that kind of value;
- a finding anywhere: the prefilter would have sent the file to the precise pass.

The precise pass may know more where it has per-call-site context the summary of a function
cannot have: a callable handed in as a parameter or closed over (its callee has no name), a
lambda's body (it runs where the lambda is called), names from star imports (those files always
go to the precise pass). `KNOWN_GAPS` lists the functions where the summary claims less today;
the test fails on a new gap and on a listed gap that is closed (then remove it from the list).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from libcst.metadata import MetadataWrapper

from mcjax_lint.analysis.cst import parse_module
from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.divergence import Divergence
from mcjax_lint.analysis.positions import lean_positions
from mcjax_lint.analysis.summary import parse
from mcjax_lint.analysis.taint import FileAnalysis
from mcjax_lint.engine import analyze, build_index, needs_full_analysis, summarize
from mcjax_lint.modnames import module_names
from mcjax_lint.settings import AnalysisSettings
from test_fixtures import case_id

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lint"
# (fixture, function): a function value chosen per process and then called (`collect =
# local_metrics if rank else gather_metrics; collect(m)`): the precise pass follows the value to
# the collective callee, the summary records a call of a local name it cannot resolve.
KNOWN_GAPS = {
    # A helper analysed again with a global array its every call passes (per-call-site context,
    # `FileAnalysis._record_param_taint`): its array work on that parameter is collective there;
    # its own summary says so only at the calls that pass one (`ProjectIndex.glob_param_work`).
    ("hazards/leader_helper_reduces_global_argument.py", "leader_helper_reduces_global_argument.squared_norm"),
    # A method called on an element subscripted out of an attribute's container of instances
    # (`self.by_step[step].commit()`): the precise pass takes the element's class (`Val.ecls`);
    # the summary's record of that call's receiver names the container, not an element of it.
    ("hazards/flag_on_object_held_in_container.py", "flag_on_object_held_in_container.Registry.commit_steps"),
    ("benign/flag_on_object_held_in_container_everywhere.py",
     "flag_on_object_held_in_container_everywhere.Registry.commit_steps"),
    ("hazards/function_chosen_by_rank.py", "function_chosen_by_rank.report"),
    # A method analysed again with what one call passes it (per-call-site context): the longest
    # of the process-local rows it is given is a source made there, which its own summary (with
    # symbolic parameters) cannot see; the caller's summary claims the process dependence.
    ("hazards/method_argument_local_rows.py", "method_argument_local_rows.Scorer.score_rows"),
    # The same per-call-site context: a set handed to a helper is iterated there in this process's
    # order, a source made at the helper's loop from what one call passes; the caller's summary
    # claims the order (a set handed to a project function).
    ("hazards/set_handed_to_helper.py", "set_handed_to_helper.reduce_each"),
    # The same per-call-site context: an argument that is an instance of a project class resolves
    # the callee's method calls on it (`ema.update(grads)` inside `apply`, given an `Ema` at
    # the call); the callee's own summary has a parameter of unknown class and a method name too
    # generic to resolve by name, so other files do not learn that such a call does collective
    # work (the file itself goes to the precise pass: its sources are claimed).
    ("hazards/argument_object_method_skipped_on_overflow.py",
     "argument_object_method_skipped_on_overflow.OverflowGuard.apply"),
    ("benign/argument_object_method_run_on_overflow.py", "argument_object_method_run_on_overflow.OverflowGuard.apply"),
    # The same: `next(clock)` on a parameter that every call passes an `AgreedClock` (the
    # index's `param_classes`) runs that class's collective `__next__`; the function's own summary
    # has a parameter of unknown class, on which it records no `__next__` call.
    ("hazards/iter_builtin_runs_collective_dunder.py", "iter_builtin_runs_collective_dunder.leader_tick"),
    ("benign/iter_builtin_dunder_run_everywhere.py", "iter_builtin_dunder_run_everywhere.tick"),
    # As `set_handed_to_helper.reduce_each`: a set handed to a helper, iterated there in this
    # process's order around a per-process collective (a source made at the helper's loop).
    ("hazards/set_order_per_element_local_gather.py", "set_order_per_element_local_gather._reduce_each"),
}
CASES = sorted(p for kind in ("hazards", "benign") for p in (FIXTURES / kind).iterdir()
               if p.suffix == ".py" or (p.is_dir() and any(p.rglob("*.py"))))


def _spans(source: str, module: str) -> list[tuple[int, int, str]]:
    """(first line, last line, summary name) of every function, innermost last for a line."""
    out = [(1, source.count("\n") + 1, f"{module}.<module>")]

    def walk(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((child.lineno, child.end_lineno, f"{prefix}.{child.name}"))
                walk(child, f"{prefix}.{child.name}")
            elif isinstance(child, ast.Lambda):
                out.append((child.lineno, child.end_lineno, "<lambda>"))
                walk(child, prefix)
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}.{child.name}")
            else:
                walk(child, prefix)

    walk(parse(source, "<fixture>"), module)
    return out


def _owner(spans, line: int) -> str:
    inside = [s for s in spans if s[0] <= line <= s[1]]
    return max(inside, key=lambda s: s[0])[2]


# (ids start with the rule codes a fixture is about: `pytest -k MCJ203` selects that rule's)
@pytest.mark.parametrize("case", CASES, ids=[case_id(f"{p.parent.name}/{p.name}", p) for p in CASES])
def test_summary_claims_cover_what_the_precise_pass_finds(case: Path):
    name = f"{case.parent.name}/{case.name}"
    files = [case] if case.is_file() else sorted(case.rglob("*.py"))
    sources = {str(f): f.read_text(encoding="utf-8") for f in files}
    names = module_names(sources)
    summaries = {p: summarize(t, p, names[p]) for p, t in sources.items()}
    index = build_index(summaries.values())
    gaps: set[tuple[str, str]] = set()
    for path, source in sources.items():
        s = summaries[path]
        if analyze(source, path, names[path], index):
            assert needs_full_analysis(s, index), f"{path}: findings in a file the prefilter skips"
        if any(k.startswith("*") for k in s.imports):
            continue  # star imports resolve only in the precise pass (such files always go there)
        spans = _spans(source, names[path])
        claims = {q: index.function_claims(q, f, path) for q, f in s.functions.items()}
        wrapper = MetadataWrapper(parse_module(source, path), unsafe_skip_copy=True)
        fa = FileAnalysis(wrapper.module, lean_positions(wrapper.module), path, names[path], index,
                          AnalysisSettings(), s.imports)
        fa.seeded_modules = set(s.seeded_rngs)
        fa.run()
        Divergence(fa).run()
        for info in fa.calls.values():
            if not info.collective or info.name is None:
                continue  # (a parameter's or closure's callable: per-call-site context)
            q = _owner(spans, fa.pos(info.node)[0])
            if q != "<lambda>" and not (q in claims and claims[q][3]):
                gaps.add((name, q))
        for sink in fa.sinks:
            src = sink.src
            if src.origin or not src.line:
                continue  # made in another function: that one's claims cover it
            q = _owner(spans, src.line)
            kind = {kinds.ORDER: 1, kinds.HASH: 2}.get(sink.facet, 0)
            if q == "<lambda>" or src.kind in (kinds.LENGTH, kinds.ELEMENTS):
                continue  # a shape or structure source (MCJ301/302): no summary fact of its own
            if not (q in claims and claims[q][kind]):
                gaps.add((name, q))
    known = {g for g in KNOWN_GAPS if g[0] == name}
    assert gaps - known == set(), "the summary pass claims less than the precise pass finds"
    assert known - gaps == set(), "a known gap is closed: remove it from KNOWN_GAPS"


def _scopes_ast(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """The module and each function, in source order, with their dotted names."""
    out: list[tuple[str, ast.AST]] = [("", tree)]

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((prefix + child.name, child))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def _scopes_cst(module) -> list[tuple[str, object]]:
    import libcst as cst
    from mcjax_lint.analysis.tree import children
    out: list[tuple[str, object]] = [("", module)]

    def visit(node, prefix: str) -> None:
        for child in children(node):
            if isinstance(child, cst.FunctionDef):
                out.append((prefix + child.name.value, child))
            if isinstance(child, (cst.FunctionDef, cst.ClassDef)):
                visit(child, prefix + child.name.value + ".")
            else:
                visit(child, prefix)

    visit(module, "")
    return out


@pytest.mark.parametrize("case", CASES, ids=[case_id(f"{p.parent.name}/{p.name}", p) for p in CASES])
def test_both_readers_find_the_same_bindings(case: Path):
    """Which names a scope binds, how often, to what, and which are declared `global` or
    `nonlocal` (`semantics.scope_counts` decides the process-count names from it) is read from
    each tree by its own walker (`summary._scope_bindings`, `taint._scope_bindings`): on every
    fixture, every function and module, the two readings are the same."""
    from mcjax_lint.analysis import summary, taint
    files = [case] if case.is_file() else sorted(case.rglob("*.py"))
    for f in files:
        source = f.read_text(encoding="utf-8")
        a_scopes = _scopes_ast(parse(source, str(f)))
        c_scopes = _scopes_cst(parse_module(source, str(f)))
        assert [q for q, _ in a_scopes] == [q for q, _ in c_scopes], f
        for (q, a_node), (_, c_node) in zip(a_scopes, c_scopes):
            ab, aa, ad = summary._scope_bindings(a_node)
            cb, ca, cd = taint._scope_bindings(c_node)
            where = f"{f.name}:{q or '<module>'}"
            assert sorted(ab) == sorted(cb), where
            assert ad == cd, where
            assert sorted(n for n, _ in aa) == sorted(n for n, _ in ca), where
