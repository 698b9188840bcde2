"""MCJ301 process-dependent-shape."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.rules.base import Rule, related_source


class ProcessDependentShape(Rule):
    CODE = "MCJ301"
    NAME = "process-dependent-shape"
    SEVERITY = "error"
    SUMMARY = "A shape or dtype computed from a process-dependent value is passed into a global array or collective."
    FAMILY = "process-dependent shapes and pytrees"

    def visit_Call(self, node: cst.Call) -> None:
        for sink in self.ctx.div.sinks_at.get(node, ()):
            if sink.code != self.CODE:
                continue
            s = sink.src
            where = f" (line {s.line})" if s.located and s.line != self.line(node) else ""
            if sink.static:
                self.report(node, (
                    f"{s.describe()}{where} is passed as the {sink.what}: its value differs between processes, "
                    f"and each value of a static argument compiles another program"),
                    related=(related_source(s, "value source"),),
                    chain=[*self.source_steps(s), self.work_step(node, sink.what, "static argument")])
                continue
            self.report(node, (
                f"{s.describe()}{where} is passed into {sink.what}: its shape/dtype differs between processes, "
                f"so they build different global arrays or programs"),
                related=(related_source(s, "shape source"),),
                chain=[*self.source_steps(s), self.work_step(node, sink.what, "passed into")])
