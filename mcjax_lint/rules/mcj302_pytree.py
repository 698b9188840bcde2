"""MCJ302 process-dependent-pytree."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.rules.base import Rule, related_source


class ProcessDependentPytree(Rule):
    CODE = "MCJ302"
    NAME = "process-dependent-pytree"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = "A pytree whose structure differs between processes (None on some, process-dependent keys) is passed into a collective."
    FAMILY = "process-dependent shapes and pytrees"

    def reports_sink(self, sink: Sink) -> bool:
        # Passed into collective work: a pytree whose structure differs, or a list whose length
        # differs (a different number of leaves).
        return sink.place == kinds.COLLECTIVE_INPUT and (
            sink.facet == kinds.TREE or sink.facet == kinds.SHAPE and sink.src.kind == kinds.LENGTH)

    def visit_Call(self, node: cst.Call) -> None:
        for sink in self.sinks(node):
            s = sink.src
            where = f" (line {s.line})" if s.located and s.line != self.line(node) else ""
            self.report(node, (
                f"{s.describe()}{where} is passed into {sink.what}: its pytree structure differs between processes"),
                related=(related_source(s, "structure source"),),
                chain=[*self.source_steps(s), self.work_step(node, sink.what, "passed into")])
