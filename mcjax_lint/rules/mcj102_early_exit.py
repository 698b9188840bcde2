"""MCJ102 process-dependent-early-exit."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule, visits, describe_source, process_sources, related_source


@visits("Return", "Break", "Continue", "Raise", "Expr")
class ProcessDependentEarlyExit(Rule):
    CODE = "MCJ102"
    NAME = "process-dependent-early-exit"
    SEVERITY = "error"
    SUMMARY = "A return/break/continue/raise/exit under a process-dependent condition skips collective work that follows."
    FAMILY = "process-dependent control flow"

    def check(self, node: cst.CSTNode) -> None:
        for p in self.ctx.div.exits_at.get(node, ()):
            srcs = process_sources(p.val)
            if not srcs:
                continue
            s = srcs[0]
            kind = "`sys.exit()`" if p.kind == "exit" else f"`{p.kind}`"
            self.report(node, (
                f"{kind} under a process-dependent condition ({describe_source(s, self.line(node))}, "
                f"line {self.line(p.cond_node)}) skips {self.tok_text(p.skipped)} that the other processes still run"),
                related=(related_source(s), ("condition", *self.where(p.cond_node)), self.related_tok(p.skipped, "skipped")),
                chain=[*self.source_steps(s), self.step(p.cond_node, "condition"),
                       Step(self.line(node), f"{kind} under it", not p.guess, p.guess),
                       self.tok_step(p.skipped, "skipped")])
