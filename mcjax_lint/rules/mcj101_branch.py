"""MCJ101 process-dependent-branch."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.rules.base import Rule, visits, describe_source, process_sources, related_source


@visits("If", "IfExp", "BooleanOperation", "Match", "Subscript", "Call", "Decorator")
class ProcessDependentBranch(Rule):
    CODE = "MCJ101"
    NAME = "process-dependent-branch"
    SEVERITY = "error"
    SUMMARY = "A process-dependent condition chooses between branches that issue different collective work."
    FAMILY = "process-dependent control flow"

    def check(self, node: cst.CSTNode) -> None:
        for p in self.ctx.div.branches_at.get(node, ()):
            srcs = process_sources(p.val)
            if not srcs:
                continue
            s = srcs[0]
            what = {cst.If: "`if`", cst.IfExp: "conditional expression", cst.BooleanOperation: "`and`/`or`",
                    cst.Match: "`match`"}.get(type(node), "branch")
            code = self.ctx.fa.module.code_for_node
            if p.chosen and isinstance(node, cst.Call):
                msg = (f"`{code(node)}` returns a function chosen by a process-dependent value "
                       f"({describe_source(s, self.line(node))}), called as collective work at line "
                       f"{self.line(p.collective.node)}: processes run different programs there")
            elif p.chosen and isinstance(node, cst.Subscript):
                msg = (f"`{code(node)}` takes its key from a process-dependent value ({describe_source(s, self.line(node))}): "
                       f"it chooses the function called as collective work at line {self.line(p.collective.node)}, "
                       f"so processes run different programs there")
            elif p.chosen:
                msg = (f"{what} on a process-dependent value ({describe_source(s, self.line(node))}) chooses between "
                       f"`{code(node.body)}` and `{code(node.orelse)}`, called as collective work at line "
                       f"{self.line(p.collective.node)}: processes run different programs there")
            elif p.gated:
                what = f"`{code(node.func)}()`"
                msg = (f"{what} hands `{code(p.collective.node)}` on to code that runs it only where a process-dependent "
                       f"condition holds ({describe_source(s, self.line(node))}): its collective work "
                       f"{self.tok_text(p.collective)} runs on only some processes")
            elif isinstance(node, cst.Decorator):
                what = f"decorator `@{code(node.decorator)}`"
                msg = (f"{what} runs the function's body only where a process-dependent condition holds "
                       f"({describe_source(s, self.line(node))}): its collective work {self.tok_text(p.collective)} "
                       f"runs on only some processes")
            else:
                msg = (f"{what} on a process-dependent value ({describe_source(s, self.line(node))}) issues different "
                       f"collective work on different processes: {self.tok_text(p.collective)} runs on only some of them")
            chain = [*self.source_steps(s), self.step(node, f"{what} on it"), self.tok_step(p.collective)]
            self.report(node, msg, related=(related_source(s), self.related_tok(p.collective)), chain=chain)
