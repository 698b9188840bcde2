"""MCJ304 process-dependent-trace-constant."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import kinds, semantics
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.rules.base import Rule, related_source, visits


@visits("Call", "Name")
class ProcessDependentTraceConstant(Rule):
    CODE = "MCJ304"
    NAME = "process-dependent-trace-constant"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = ("A process-dependent value is read inside a function traced by jit/pmap/shard_map: it is "
               "compiled into the program as a constant, so each process runs a different program.")
    FAMILY = "process-dependent shapes and pytrees"

    def reports_sink(self, sink: Sink) -> bool:
        return sink.place == kinds.TRACE_CONSTANT

    def check(self, node: cst.CSTNode) -> None:
        for sink in self.sinks(node)[:1]:
            s = sink.src
            where = f" (line {s.line})" if s.located and s.line != self.line(node) else ""
            read = "read" if isinstance(node, cst.Call) else f"`{node.value}`, closed over,"
            self.report(node, (
                f"{s.describe()}{where} is {read} inside {semantics.known_global_inputs(sink.what)} while it is traced: the value is "
                f"compiled into the program as a constant, so each process compiles a different program "
                f"for the same global computation (different numbers, or a mismatch); pass it in as an "
                f"argument (traced, one program) or use `jax.lax.axis_index` inside `shard_map`"),
                related=(related_source(s, "value source"),),
                chain=[*self.source_steps(s), self.work_step(node, sink.what, "traced by")])
