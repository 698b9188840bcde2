"""A rule is decided in its own module: the engine labels what it finds by kind (what a source
is, where a value is used: `analysis/kinds.py`) and a rule picks the kinds it reports.

The rules below are written here, outside mcjax_lint, as a new rule's module would be: each
asks the engine and decides its own severity and message, and nothing in the engine changes for
them. A shipped rule is one such class in `mcjax_lint/rules/mcjNNN_<name>.py`; the catalogue
reads its entry from that file alone (the last test).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from mcjax_lint import rules as registry
from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.driver import analyze_source
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.engine import build_index, summarize
from mcjax_lint.model import Severity
from mcjax_lint.rules.base import Rule, process_sources
from mcjax_lint.rules.origin import OriginRule
from mcjax_lint.settings import AnalysisSettings


class SeedFromStringHash(Rule):
    """Reported at the seed rather than at the `hash()` (MCJ203 reports the origin)."""

    CODE = "MCJ991"
    SEVERITY = "warning"

    def reports_sink(self, sink: Sink) -> bool:
        return sink.place == kinds.SEED and sink.src.kind == kinds.STRING_HASH

    def visit_Call(self, node: cst.Call) -> None:
        for sink in self.sinks(node):
            self.report(node, f"{sink.what} comes from {sink.src.describe()}",
                        chain=[*self.source_steps(sink.src), self.work_step(node, sink.what, "seed")])


class ListingSplitByProcess(OriginRule):
    """A directory listing's order split between processes, and nothing else MCJ202 reports."""

    CODE = "MCJ992"
    FACET = kinds.ORDER
    SOURCE_KINDS = frozenset({kinds.LISTING_ORDER})
    HEAD = "split between processes in filesystem order"

    def reports_sink(self, sink: Sink) -> bool:
        return super().reports_sink(sink) and sink.place == kinds.PARTITION

    def check(self, node: cst.CSTNode) -> None:
        for sink in self.sinks(node):
            self.emit(sink.src, sink.what, node, self.work_step(node, sink.what, "passed into"))


class ClockDecidesCollective(Rule):
    """A branch around collective work decided by the clock alone (MCJ101 reports every
    process-dependent branch; this one asks which kind of source decides)."""

    CODE = "MCJ994"
    SEVERITY = "warning"

    def visit_If(self, node: cst.If) -> None:
        for p in self.ctx.div.branches_at.get(node, ()):
            clocks = [s for s in process_sources(p.val) if s.kind == kinds.CLOCK]
            if clocks:
                self.report(node, f"{clocks[0].describe()} decides whether {p.collective.desc} runs",
                            chain=[*self.source_steps(clocks[0]), self.tok_step(p.collective)])


SOURCE = textwrap.dedent("""\
    import glob
    import time

    import jax


    def key_for(name):
        return jax.random.PRNGKey(hash(f"run/{name}"))


    def my_files():
        files = glob.glob("/data/*.npy")
        return files[jax.process_index()::jax.process_count()]


    @jax.jit
    def step(x):
        return x * 2


    def step_with_listing(batch):
        names = glob.glob("/data/*.txt")
        if names[0].endswith("a.txt"):
            step(batch)


    def timed(batch, start):
        if time.time() - start > 60:
            step(batch)
        if jax.process_index() == 0:
            step(batch)
""")


def _lint(rules: list[type] | None) -> list[tuple[int, str, Severity, str]]:
    s = summarize(SOURCE, "m.py", "m")
    found = analyze_source(SOURCE, "m.py", "m", build_index([s]), AnalysisSettings(), rules=rules)
    return [(f.line, f.code, f.severity, f.message) for f in found]


def test_rules_defined_outside_the_engine_pick_their_kinds():
    got = _lint([SeedFromStringHash, ListingSplitByProcess, ClockDecidesCollective])
    assert [(line, code, sev) for line, code, sev, _ in got] == [
        (8, "MCJ991", Severity.WARNING), (12, "MCJ992", Severity.ERROR), (28, "MCJ994", Severity.WARNING)]
    assert got[0][3] == "the seed of `PRNGKey()` comes from `hash()` of a string"
    assert got[1][3].startswith("`glob.glob()`: split between processes in filesystem order; it reaches "
                                "a per-process partition (sliced by process) (line 13)")
    # (`step` is given a parameter of unknown placement: its collective work is a guess)
    assert got[2][3].startswith("the wall clock (`time.time()`) decides whether `step` (jit) "
                                "(on inputs not known to be global arrays) runs [possible: ")


def test_the_shipped_rules_report_the_same_facts_their_own_way():
    """The catalogue's MCJ203 reports the hash at its origin; MCJ202 also the listing that
    decides whether collective work runs (line 22 reaches the `if` at 23); MCJ101 every branch
    on a process-dependent value, the clock's and the process index's."""
    got = {(line, code) for line, code, _, _ in _lint(None)}
    assert got == {(8, "MCJ203"), (12, "MCJ202"), (22, "MCJ202"), (28, "MCJ101"), (30, "MCJ101")}


def test_the_catalogue_reads_a_new_rule_from_its_file_alone(tmp_path: Path):
    module = tmp_path / "mcj993_example.py"
    module.write_text(textwrap.dedent('''\
        """MCJ993 example."""
        from mcjax_lint.analysis import kinds
        from mcjax_lint.rules.base import Rule, process_sources


        class Example(Rule):
            CODE = "MCJ993"
            NAME = "example"
            SEVERITY = "warning"
            SUMMARY = "An example."
            FAMILY = "examples"

            def reports_sink(self, sink):
                return sink.place == kinds.SEED
        '''), encoding="utf-8")
    info = registry._entry(module)
    assert (info.code, info.name, info.severity, info.family) == ("MCJ993", "example", Severity.WARNING, "examples")
