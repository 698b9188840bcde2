"""MCJ303 process-dependent-global-data."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule, related_source


class ProcessDependentGlobalData(Rule):
    CODE = "MCJ303"
    NAME = "process-dependent-global-data"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = ("Host data that must be the same on every process (`device_put` to a sharding, a replicated "
               "global array, a barrier's name) is computed from a process-dependent value.")
    FAMILY = "process-dependent shapes and pytrees"

    def reports_sink(self, sink: Sink) -> bool:
        return sink.place in (kinds.REPLICATED_DATA, kinds.BARRIER_NAME, kinds.REPLICATED_STATE) or (
            sink.place == kinds.PARTITION and sink.facet == kinds.VALUE)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.visit_Call(node)  # (a per-process partition: `whole[rank * n:(rank + 1) * n]`)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.visit_Call(node)  # (a replicated state updated from itself: `w = w - lr * agreed_grad`)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.visit_Call(node)

    def visit_Call(self, node: cst.Call | cst.Subscript | cst.Assign | cst.AugAssign) -> None:
        sinks = self.sinks(node)
        # A source in this file as written is certain; a value that became process-dependent
        # inside another function (a retry loop's deadline, a helper's default RNG) may be made
        # to agree there in ways not followed: a guess.
        # (of the sources of a whole split by process, name the one that drew it: the clock, an RNG)
        sinks = sorted(sinks, key=lambda k: k.place == kinds.PARTITION and kinds.unguarded(k.src.kind) not in (
            kinds.CLOCK, kinds.RANDOM))
        direct = [k for k in sinks if not k.src.origin]
        for sink in (direct or sinks)[:1]:
            s = sink.src
            where = f" (line {s.line})" if s.located and s.line != self.line(node) else ""
            chain = [*self.source_steps(s)]
            if not direct:
                chain.append(Step(s.line if s.located else 0, f"made process-dependent in another function: {s.describe()}",
                                  False, "a value decided inside another function may be made to agree there"))
            verb, message = _message(sink, s.describe(), where)
            if sink.place == kinds.REPLICATED_STATE:
                # (that the update means the state to be replicated is read off its form: a guess)
                chain.append(Step(self.line(node), f"{verb} {sink.what}", False,
                                  "a state updated by a cross-process result is taken to be meant the same everywhere"))
            else:
                chain.append(self.work_step(node, sink.what, verb))
            self.report(node, message, related=(related_source(s, "value source"),), chain=chain)


def _message(sink: Sink, source: str, where: str) -> tuple[str, str]:
    """How the chain's last step names the sink, and the finding's message, by the kind of data
    that must agree."""
    if sink.place == kinds.BARRIER_NAME:
        return "passed as", (
            f"{sink.what} is computed from {source}{where}: every process must name the "
            f"barrier alike, and here the names differ, so the barrier fails on the mismatch or "
            f"each process waits for the others at its own barrier until the timeout")
    if sink.place == kinds.REPLICATED_STATE:
        return "updated as", (
            f"{sink.what} is updated from a cross-process result but holds numbers drawn from "
            f"{source}{where}: an update by a result every "
            f"process shares (an all-reduced gradient) presumes the same state everywhere, and "
            f"here each process drew its own, so the replicas start apart and stay apart; draw it "
            f"from a seed every process shares (or broadcast it) first")
    if sink.place == kinds.PARTITION:
        return "taken apart as", (
            f"this process takes its part ({sink.what}) of data drawn from {source}{where}"
            f": each process drew its own whole, so the parts come from "
            f"different wholes and together repeat some elements and miss others; draw it "
            f"from a seed every process shares (or broadcast it) before splitting it")
    if "taken as replicated" in sink.what:
        return "host data of", (
            f"host value computed from {source}{where} is passed into {sink.what}: "
            f"JAX places it on every process's devices as one replicated input without "
            f"comparing the copies, and here they differ, so the processes compute one "
            f"global result from different values")
    return "host data of", (
        f"host data computed from {source}{where} is passed into {sink.what}: it must be the "
        f"same on every process, and here it differs, so the processes build one array from "
        f"different values (or `device_put` fails comparing them)")
