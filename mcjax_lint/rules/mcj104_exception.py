"""MCJ104 one-process-exception."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule, visits, describe_source, process_sources, related_source


@visits("ExceptHandler", "Finally", "With", "ExceptStarHandler", "Raise", "Call", "Attribute", "Subscript")
class OneProcessException(Rule):
    CODE = "MCJ104"
    NAME = "one-process-exception"
    # An exception on one process is a hazard only when it happens, which the analysis cannot
    # know: a warning even when every step is certain.
    SEVERITY = "warning"
    SUMMARY = ("An exception that can happen on one process only is swallowed around collective work, "
               "or reaches collective work in `finally`/`__exit__`.")
    FAMILY = "process-dependent control flow"

    def check(self, node: cst.CSTNode) -> None:
        for p in self.ctx.div.exceptions_at.get(node, ()):
            srcs = process_sources(p.val)
            cause = f" ({describe_source(srcs[0], self.line(p.raise_node))})" if srcs else ""
            raise_line = self.line(p.raise_node)
            if p.kind == "swallowed":
                msg = (f"an exception that can happen on one process only (line {raise_line}{cause}) is swallowed "
                       f"here, so that process skips {self.tok_text(p.collective)} while the others wait in it")
            elif p.kind == "handler":
                msg = (f"this handler runs only on the process where line {raise_line}{cause} raised, and does "
                       f"collective work ({self.tok_text(p.collective)}) the other processes never join")
            elif p.kind == "finally":
                msg = (f"if line {raise_line}{cause} raises on one process, that process runs "
                       f"{self.tok_text(p.collective)} in `finally` while the others are still in the `try` body's collective work")
            elif p.kind == "caught":
                info = self.ctx.fa.calls.get(node)
                callee = f"`{(info.name if info is not None and info.name else 'this call').rsplit('.', 1)[-1]}()`"
                msg = (f"{callee} can fail on one process only{cause}, before {self.tok_text(p.collective)} in this function; "
                       f"a caller catches the failure (line {raise_line}) and goes on, so this process skips that "
                       f"collective while the others wait in it")
            elif p.kind == "fallback":
                msg = (f"the `try` body returns unless line {raise_line} fails; where it fails on one process only "
                       f"(a local file missing or cut short there), this handler sends that process on to "
                       f"{self.tok_text(p.collective)} after the `try`, which the processes that returned never join")
            elif p.kind == "absent":
                msg = (f"`.{p.raise_node.attr.value}` is set only under a process-dependent condition{cause}: reading "
                       f"it here raises AttributeError on the processes where it was not set, while the others go "
                       f"on to {self.tok_text(p.collective)} and wait there until the coordination service aborts them")
            elif p.kind == "none":
                r = p.raise_node
                arg = r.value if isinstance(r, cst.Subscript) else r.args[0].value \
                    if isinstance(r, cst.Call) and r.args else None
                name = f"`{arg.value}`" if isinstance(arg, cst.Name) else "its argument"
                use = "indexing it" if isinstance(r, cst.Subscript) else "`len()` of it"
                msg = (f"{name} is None on some processes{cause}: {use} raises TypeError there, while "
                       f"the others go on to {self.tok_text(p.collective)} and wait there until the coordination "
                       f"service aborts them")
            elif p.kind == "helper":
                msg = (f"{self._callee(node)} can raise (line {raise_line}) and runs here on some processes only{cause}: where "
                       f"it raises, that process fails while the others go on to {self.tok_text(p.collective)} "
                       f"and wait there until the coordination service aborts them")
            elif p.kind == "raise" and node is not p.raise_node:
                msg = (f"{self._callee(node)} raises under a process-dependent condition at line {raise_line}{cause}: this "
                       f"process fails here while the others go on to {self.tok_text(p.collective)} and wait "
                       f"there until the coordination service aborts them")
            elif p.kind == "raise":
                msg = (f"raised under a process-dependent condition{cause}: this process fails while the others go "
                       f"on to {self.tok_text(p.collective)} and wait there until the coordination service "
                       f"aborts them")
            else:
                msg = (f"if line {raise_line}{cause} raises on one process, `__exit__` runs "
                       f"{p.collective.desc} on that process while the others are still in the body's collective work")
            related = [("may raise on one process", *self.where(p.raise_node)) if p.kind != "caught" else
                       ("caught and swallowed", *self.where(p.raise_node)), self.related_tok(p.collective)]
            if srcs:
                related.insert(0, related_source(srcs[0]))
            raised = Step(self.line(p.raise_node), f"`{_short(self.ctx.fa.module.code_for_node(p.raise_node))}`",
                          not p.guess, p.guess)
            chain = [*(self.source_steps(srcs[0]) if srcs else ()), raised, self.step(node, f"{p.kind} here"),
                     self.tok_step(p.collective)]
            self.report(node, msg, related=related, chain=chain)

    def _callee(self, node: cst.CSTNode) -> str:
        """The called function's short name, quoted (`save()`), for a message."""
        info = self.ctx.fa.calls.get(node)
        called = (info.callee or info.name) if info is not None else None
        return f"`{(called or 'this call').rsplit('.', 1)[-1]}()`"


def _short(code: str, limit: int = 50) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[:limit - 1] + "…"
