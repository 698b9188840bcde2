"""MCJ301 process-dependent-shape."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.rules.base import Rule, related_source


class ProcessDependentShape(Rule):
    CODE = "MCJ301"
    NAME = "process-dependent-shape"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = "A shape or dtype computed from a process-dependent value is passed into a global array or collective."
    FAMILY = "process-dependent shapes and pytrees"

    def reports_sink(self, sink: Sink) -> bool:
        # An array whose shape differs passed into collective work or given as a global shape
        # (a list whose *length* differs is a pytree's structure: MCJ302), and any process-
        # dependent value given as a static argument (each value compiles another program).
        if sink.place == kinds.STATIC_ARGUMENT:
            return True
        return sink.place in (kinds.COLLECTIVE_INPUT, kinds.GLOBAL_SHAPE) and sink.facet == kinds.SHAPE \
            and sink.src.kind != kinds.LENGTH

    def visit_Call(self, node: cst.Call) -> None:
        for sink in self.sinks(node):
            s = sink.src
            where = f" (line {s.line})" if s.located and s.line != self.line(node) else ""
            if sink.place == kinds.STATIC_ARGUMENT:
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
