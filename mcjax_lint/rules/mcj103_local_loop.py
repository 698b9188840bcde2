"""MCJ103 process-local-loop."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import evidence
from mcjax_lint.rules.base import Rule, visits, describe_source, process_sources, related_source


@visits("For", "While", "ListComp", "GeneratorExp", "SetComp", "DictComp")
class ProcessLocalLoop(Rule):
    CODE = "MCJ103"
    NAME = "process-local-loop"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = "A loop over process-local data, or with a process-dependent exit condition, does collective work in its body."
    FAMILY = "process-dependent control flow"

    def check(self, node: cst.CSTNode) -> None:
        for p in self.ctx.div.loops_at.get(node, ()):
            srcs = process_sources(p.val)
            if not srcs:
                continue
            s = srcs[0]
            tail = "processes can run different numbers of iterations and the last one waits forever"
            if p.kind == "iterable" and any(g[2] == evidence.BOUNDED_COUNT for g in s.guess):
                # (`zip(range(n), data)`, n agreed: only a process whose data runs out first differs)
                head = f"loop bounded by an agreed count over process-local data ({describe_source(s, self.line(node))})"
                tail = "a process whose data runs out before the count leaves early and the others wait forever"
            elif p.kind == "iterable":
                head = f"loop over process-local data ({describe_source(s, self.line(node))})"
            else:
                head = f"loop with a process-dependent exit condition ({describe_source(s, self.line(node))})"
            self.report(node, (
                f"{head} does collective work ({self.tok_text(p.collective)}): {tail}"),
                related=(related_source(s), self.related_tok(p.collective)),
                chain=[*self.source_steps(s), self.step(node, "the loop"), self.tok_step(p.collective)])
