"""Shared base of the rules reported at the *origin* of a divergent value (MCJ201/202/203).

Nondeterministic order and string hashes are reported where they enter the program (the
listing, the set iteration, the `hash()` call) — that is where the fix goes — whenever the
value reaches a decision around collective work or is passed into collective work.
"""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.analysis.values import Src, Val
from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule, visits


@visits("If", "IfExp", "BooleanOperation", "Match", "For", "While", "ListComp", "GeneratorExp", "SetComp", "DictComp", "Return", "Break", "Continue", "Raise", "Expr", "Call", "Subscript")
class OriginRule(Rule):
    FACET = kinds.ORDER  # which taint holds this rule's sources (kinds.ORDER or kinds.HASH)
    SOURCE_KINDS: frozenset[str] = frozenset()  # which of those sources it reports (`Src.kind`)
    HEAD = ""  # how the source is described

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._origins: set = set()

    def sources(self, v: Val) -> list[Src]:
        return sorted(s for s in getattr(v, self.FACET) if s.kind in self.SOURCE_KINDS)

    def reports_sink(self, sink: Sink) -> bool:
        # Wherever the engine found such a source used: passed into collective work, a seed, a
        # per-process partition.
        return sink.facet == self.FACET and sink.src.kind in self.SOURCE_KINDS

    def emit(self, s: Src, what: str, where: cst.CSTNode, work: Step) -> None:
        ln, col = self.where(where)
        text = s.describe()
        # An origin the analysis could not place in this file (it always should) is reported
        # where it is used rather than at a line of another file.
        chain = [*self.source_steps(s), self.step(where, f"reaches: {what}")]
        if work.line != ln or not work.certain:
            chain.append(work)
        # Each sink this origin reaches is its own finding (one path may be fixed or suppressed
        # while another is not); the fix, the same edit, goes with the first only.
        at = s if s.located else where
        key = (at.line, at.column) if isinstance(at, Src) else id(at)
        first = key not in self._origins
        self._origins.add(key)
        self.report(at, f"{text}: {self.HEAD}; it reaches {what} (line {ln})",
                    related=((f"reaches: {what}", ln, col),), fix=s.fix if s.located and first else None,
                    chain=chain, per_sink=ln)

    def check(self, node: cst.CSTNode) -> None:
        div = self.ctx.div
        for p in div.branches_at.get(node, ()):
            for s in self.sources(p.val):
                self.emit(s, f"a branch that decides whether {p.collective.desc} runs", node, self.tok_step(p.collective))
        for p in div.exits_at.get(node, ()):
            for s in self.sources(p.val):
                self.emit(s, f"the condition of a `{p.kind}` that skips {p.skipped.desc}", node,
                          self.tok_step(p.skipped, "skipped"))
        for p in div.loops_at.get(node, ()):
            for s in self.sources(p.val):
                self.emit(s, f"the exit condition of a loop doing {p.collective.desc}", node, self.tok_step(p.collective))
        for sink in self.sinks(node):
            self.emit(sink.src, sink.what, node, self.work_step(node, sink.what, "passed into"))
