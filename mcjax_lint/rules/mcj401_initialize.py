"""MCJ401 initialize-after-device-access."""

from __future__ import annotations

import libcst as cst

from mcjax_lint import knowledge as K
from mcjax_lint.analysis.taint import _always_exits
from mcjax_lint.rules.base import Rule


class InitializeAfterDeviceAccess(Rule):
    CODE = "MCJ401"
    NAME = "initialize-after-device-access"
    SEVERITY = "error"
    SUMMARY = "`jax.distributed.initialize()` runs after JAX devices were already accessed."
    FAMILY = "initialization"
    WALKS = True  # needs every call in source order, not just the analysis' marked nodes

    def __init__(self, ctx):
        super().__init__(ctx)
        self.stack: list[list[tuple[str, cst.Call]]] = [[]]  # device accesses seen, per function
        self.branch_marks: list[tuple[int, int, list]] = []  # per open `if`: (function depth, stack mark, body's accesses)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append([])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_If(self, node: cst.If) -> None:
        self.branch_marks.append((len(self.stack), len(self.stack[-1]), []))

    def visit_If_orelse(self, node: cst.If) -> None:
        # `if gpu: init_gpu() else: jax.distributed.initialize()`: what the body accessed does
        # not precede anything in the else/elif branch; set it aside until the `if` is left.
        depth, mark, held = self.branch_marks[-1]
        if depth == len(self.stack):
            held.extend(self.stack[-1][mark:])
            del self.stack[-1][mark:]

    def leave_If(self, original_node: cst.If) -> None:
        depth, mark, held = self.branch_marks.pop()
        if depth == len(self.stack) and held:
            self.stack[-1] = self.stack[-1][:mark] + held + self.stack[-1][mark:]
        # Device access in a branch that returns/raises never precedes a later initialize().
        for block in (original_node.body, getattr(original_node.orelse, "body", None)):
            if block is not None and _always_exits(block):
                r = self.ctx.fa.pos(block)
                self.stack[-1] = [(d, n) for d, n in self.stack[-1] if not (r[0] <= self.line(n) <= r[2])]

    def visit_Call(self, node: cst.Call) -> None:
        fa = self.ctx.fa
        info = fa.calls.get(node)
        if info is None:
            return
        name = info.name or ""
        if name == K.INITIALIZE:
            self._check(node)
            return
        desc = None
        if K.is_device_access(name):
            desc = f"`{name.replace('jax.numpy.', 'jnp.')}()`"
        elif info.collective:
            desc = info.collective
        elif name in fa.index.device_access:
            desc = f"`{name.rsplit('.', 1)[-1]}()` → {fa.index.device_access[name]}"
        if desc:
            self.stack[-1].append((desc, node))

    def _check(self, node: cst.Call) -> None:
        fa = self.ctx.fa
        if self.stack[-1]:
            desc, where = self.stack[-1][0]
            self.report(node, (f"`jax.distributed.initialize()` runs after JAX devices were already accessed "
                               f"({desc} at line {self.line(where)}); it must come first"),
                        related=(("device access", *self.where(where)),),
                        chain=[self.work_step(where, desc, "device access"), self.step(node, "initialize()")])
            return
        if len(self.stack) > 1 and self.stack[0]:
            desc, where = self.stack[0][0]
            self.report(node, (f"`jax.distributed.initialize()` runs after JAX devices were already accessed at "
                               f"import time ({desc} at line {self.line(where)}); it must come first"),
                        related=(("device access", *self.where(where)),),
                        chain=[self.work_step(where, desc, "device access"), self.step(node, "initialize()")])
            return
        summary = fa.index.modules.get(fa.modname)
        for m in (summary.imported_modules if summary else ()):
            acc = fa.index.import_device_access(m)
            if acc and m != fa.modname:
                self.report(node, (f"`jax.distributed.initialize()` runs after importing `{m}`, which accesses "
                                   f"JAX devices at import time ({acc}); it must come first"))
                return
