"""MCJ105 collective-work-in-thread."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule


class CollectiveWorkInThread(Rule):
    CODE = "MCJ105"
    NAME = "collective-work-in-thread"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = ("Collective work is started on a background thread (`threading.Thread`, `executor.submit`) "
               "while the main thread dispatches collective work too, or on several pool threads at once.")
    FAMILY = "process-dependent control flow"

    def visit_Call(self, node: cst.Call) -> None:
        fa = self.ctx.fa
        start = fa.thread_starts.get(node)
        if start is None:
            return
        if node in fa.concurrent_starts:
            # Pool threads race each other: no main-thread work needed.
            self.report(node, (
                f"{start[0]} runs on several threads of a pool at once: the order in which each "
                f"process issues its runs depends on thread scheduling, so the processes' collectives "
                f"can pair up wrongly or wait for each other forever"),
                chain=[self.work_step(node, start[0], "started on several pool threads at once")])
            return
        main, where = fa.main_thread_collective(node)
        if main is None:
            return
        ln, col = self.where(main)
        info = fa.calls.get(main)
        what = info.collective if info is not None and info.collective else "collective work"
        chain = [self.work_step(node, start[0], "started on another thread")]
        if where == "elsewhere":
            # Elsewhere in the file: whether it runs while the thread does is not known.
            chain.append(Step(ln, f"main-thread collective work elsewhere in the file: {what}", False,
                              "collective work in another function may not overlap the thread"))
        elif where == "before":
            # Done before the thread starts: it overlaps only if the function runs again meanwhile.
            chain.append(Step(ln, f"main-thread collective work before the thread starts: {what}", False,
                              "done before the start; overlaps the thread only if this function runs again while it does"))
        else:
            chain.append(self.work_step(main, what, "main-thread collective work"))
        self.report(node, (
            f"{start[0]} runs on another thread while this program also dispatches {what} (line {ln}): "
            f"the order in which each process issues the two depends on thread scheduling, so the "
            f"processes' collectives can pair up wrongly or wait for each other forever"),
            related=((f"main-thread collective work: {what}", ln, col),), chain=chain)
