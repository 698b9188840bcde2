"""MCJ401 initialize-after-device-access."""

from __future__ import annotations

from collections import Counter

import libcst as cst
from libcst.helpers import get_full_name_for_node

from mcjax_lint import knowledge as K
from mcjax_lint.analysis.summary import resolve_relative
from mcjax_lint.analysis.taint import _always_exits
from mcjax_lint.analysis.tree import walk, walk_own_scope
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
        self.imports: list[list[str]] = [[]]  # modules imported so far, per function (source order)
        self.scope_imports: list[list[str]] = [[]]  # every import a function's own body runs, per function

        self.all_imports: Counter[str] = Counter()  # every import statement of the file, per module named
        self.module: cst.Module | None = None
        self.defs: list[cst.FunctionDef] = []  # the functions around the node visited, outermost first

    def visit_Module(self, node: cst.Module) -> None:
        self.scope_imports[0] = [m for st in _body_statements(node.body) for m in self._imported(st)]
        self.all_imports = Counter(m for n in walk(node) for m in self._imported(n))
        self.module = node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append([])
        self.imports.append([])
        self.scope_imports.append([m for st in _body_statements(node.body.body) for m in self._imported(st)])
        self.defs.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.defs.pop()
        self.stack.pop()
        self.imports.pop()
        self.scope_imports.pop()

    def visit_Import(self, node: cst.Import) -> None:
        self.imports[-1].extend(self._imported(node))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports[-1].extend(self._imported(node))

    def _imported(self, node: cst.CSTNode) -> list[str]:
        """The modules an import statement may load (as `summary.collect_imports` names them)."""
        if isinstance(node, cst.Import):
            return [n for a in node.names if (n := get_full_name_for_node(a.name))]
        if not isinstance(node, cst.ImportFrom):
            return []
        base = get_full_name_for_node(node.module) if node.module is not None else None
        if node.relative:
            base = resolve_relative(self.ctx.fa.modname, self.ctx.path.endswith("__init__.py"), len(node.relative), base)
        base = base or ""
        names = [] if isinstance(node.names, cst.ImportStar) else [
            f"{base}.{n}" if base else n for a in node.names if (n := get_full_name_for_node(a.name))]
        return [base, *names]

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
            self._current_call = node
            self._check(node)
            self._current_call = None
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
        # Every import of the module may have run before this call (one in another function may
        # run first: `_load(); initialize()`) except those known to run after it: the imports
        # below it in its own body (module body or function), none of which has run yet.
        after = Counter(self.scope_imports[-1]) - Counter(self.imports[-1]) + self._below_module_calls() \
            + self._in_functions_not_yet_called()
        summary = fa.index.modules.get(fa.modname)
        for m in dict.fromkeys(summary.imported_modules if summary else ()):
            if after[m] and after[m] >= self.all_imports[m]:
                continue
            acc = fa.index.import_device_access(m)
            if acc and m != fa.modname:
                self.report(node, (f"`jax.distributed.initialize()` runs after importing `{m}`, which accesses "
                                   f"JAX devices at import time ({acc}); it must come first"))
                return


    def _in_functions_not_yet_called(self) -> Counter[str]:
        """For an `initialize()` the module body runs itself (not inside a function): the imports
        inside the module's functions, which run only when a function is called, where no
        statement of the module body before this call calls anything (a call above it may run a
        function that imports: then none is known to come later). Empty for an `initialize()`
        inside a function (see `_below_module_calls`)."""
        if self.defs or self.module is None or not self.stack or len(self.stack) != 1:
            return Counter()
        here = self.line(self._current_call) if self._current_call is not None else 0
        for st in self.module.body:
            if self.line(st) >= here:
                break
            if any(isinstance(n, cst.Call) and not self._harmless_call(n) for n in walk_own_scope(st)):
                return Counter()
        return self.all_imports - Counter(self.scope_imports[0])

    def _harmless_call(self, node: cst.Call) -> bool:
        """A call that runs no function of this module: a library call the analysis resolved
        (`os.environ.get(...)`, `int(...)`), not one of a name the module defines."""
        info = self.ctx.fa.calls.get(node)
        name = (info.name if info is not None else None) or ""
        return bool(name) and not name.startswith(self.ctx.fa.modname + ".") and name.split(".")[0] != self.ctx.fa.modname

    _current_call: cst.Call | None = None

    def _below_module_calls(self) -> Counter[str]:
        """The module-level imports that have not run when the function around this call runs,
        where it is a module-level function called only from the module body (`def setup():
        initialize()`, then `setup()`, then `import lib`): those below its last call there.
        (A module body runs top to bottom; an `initialize()` runs once per process, so a later
        call from elsewhere would fail on its own.) Empty for any other function, and for one
        named anywhere else (passed, called from a function)."""
        if len(self.defs) != 1 or self.module is None or self.defs[0] not in self.module.body:
            return Counter()
        fdef = self.defs[0]
        name = fdef.name.value
        calls = [n for st in self.module.body if st is not fdef for n in walk_own_scope(st)
                 if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == name]
        named = sum(1 for n in walk(self.module) if isinstance(n, cst.Name) and n.value == name)
        if not calls or named != len(calls) + 1:  # (+1: the `def`'s own name)
            return Counter()
        last = max(self.line(c) for c in calls)
        return Counter(m for st in _body_statements(self.module.body) if self.line(st) > last for m in self._imported(st))


def _body_statements(body) -> list[cst.CSTNode]:
    """The statements a module body runs on import, nested blocks included (`if`, `try`, `with`,
    class bodies), not the bodies of functions."""
    out, todo = [], list(body)
    while todo:
        st = todo.pop(0)
        if isinstance(st, cst.SimpleStatementLine):
            out.extend(st.body)
        elif not isinstance(st, cst.FunctionDef):
            for child in st.children:
                if isinstance(child, (cst.IndentedBlock, cst.Else, cst.Finally, cst.ExceptHandler, cst.If)):
                    todo.extend(_blocks(child))
    return out


def _blocks(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.IndentedBlock):
        return list(node.body)
    if isinstance(node, cst.If):
        return [node]
    return [c for child in node.children if isinstance(child, cst.IndentedBlock) for c in child.body]
