"""MCJ305 collective-result-discarded."""

from __future__ import annotations

import libcst as cst

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence
from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule


class _NameUses(cst.CSTVisitor):
    """Each use of a name in a function body, in source order: (node, rebinds it)."""

    def __init__(self, names: set[str]):
        self.names = names
        self.uses: list[tuple[cst.Name, bool]] = []
        self._not_names: set[int] = set()
        self.bound = False  # assigned in the body (a variable of its own, not a class or a global)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name) and node.target.value in self.names:
            self.uses.append((node.target, True))
            self.bound = True
        elif isinstance(node.target, (cst.Tuple, cst.List)):
            for e in node.target.elements:
                self._bound(e.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bound(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bound(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bound(node.target)

    def _bound(self, target: cst.CSTNode) -> None:
        if isinstance(target, cst.Name) and target.value in self.names:
            self.bound = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_names.add(id(node.attr))  # (`obj.x` reads no name `x`)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_names.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names and id(node) not in self._not_names and not any(n is node for n, _ in self.uses):
            self.uses.append((node, False))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # (a nested def's names are its own)


# What a helper that exchanges host data between processes does (a functional collective, or a
# global array built from each process's data): a compute step (a jitted forward) is no exchange.
_EXCHANGES = tuple(K.COLLECTIVE_CALLS[q] for q in sorted(K.SANITIZERS | K.GLOBAL_ARRAY_CONSTRUCTORS) if q in K.COLLECTIVE_CALLS)


class CollectiveResultDiscarded(Rule):
    CODE = "MCJ305"
    NAME = "collective-result-discarded"
    SEVERITY = "error"
    SUMMARY = ("The result of a functional cross-process reduction (`process_allgather`, `broadcast_one_to_all`, "
               "`psum`, a helper returning one) is discarded while its input is used afterwards as if reduced.")
    FAMILY = "process-dependent shapes and pytrees"

    def visit_Call(self, call: cst.Call) -> None:
        scope = self.ctx.fa.discarded.get(call)
        if scope is None:
            return
        info = self.ctx.fa.calls[call]
        functional = self._functional(call, info)
        if functional is None:
            return
        names = [a.value.value for a in call.args if isinstance(a.value, cst.Name) and not a.star]
        used = next((n for n in names if self._read_after(n, call, scope)), None)
        if used is None:
            return  # (a value never read again: a barrier-like call, nothing lost)
        differs = self._differs(call, info, used, scope)
        if differs is None:
            return  # (a constant: the same on every process, its reduction is what each one has)
        certain, what = functional
        # (a functional collective returns its result whatever its inputs: certain)
        chain = [self.step(call, f"collective work: {what}") if certain else self.work_step(call, info.collective)]
        if not certain:
            chain.append(Step(self.line(call), f"{what} returns the global array it computes", False,
                              "a helper's result may be other than the reduction of its argument"))
        if not differs:
            chain.append(Step(self.line(call), f"`{used}` differs between processes", False,
                              "an argument not known to differ between processes may be the same "
                              "everywhere (gathered as a barrier: nothing lost)"))
        self.report(call, (
            f"the result of {what} is discarded, and `{used}` is used afterwards: a functional collective "
            f"changes nothing in place, so each process goes on with its own local `{used}` instead of the "
            f"reduced value; assign the result (`{used} = ...`)"), chain=chain)

    def _differs(self, call: cst.Call, info, name: str, scope: cst.CSTNode) -> bool | None:
        """Whether the argument `name` of `call` differs between processes, so that dropping its
        reduction loses something: True when it is known to (process-dependent data, or any value
        inside a traced function, one block per device: `lax.psum(total, "data")`); None when it
        is a constant (`marker = np.full((1,), 7)`: every process already holds the reduction's
        input); False when nothing says (a parameter's value: a guess)."""
        q = self.ctx.fa.qualify(call.func) or ""
        if q.startswith("jax.lax."):
            return True
        pos = next((i for i, a in enumerate(call.args) if a.keyword is None and isinstance(a.value, cst.Name)
                    and a.value.value == name), None)
        val = next((v for k, v in info.args if k == pos), None)
        if val is not None and (val.pd or val.pdc):
            return True
        return None if _constant_bindings(scope, name, self.ctx.fa) else False

    def _functional(self, call: cst.Call, info) -> tuple[bool, str] | None:
        """(certain, description) when `call` returns what it computes across processes: a known
        functional collective (certain), or a project function each of whose candidates exchanges
        data between processes (`_EXCHANGES`) and returns a global array or a collective's result,
        not host data (a guess: `float(step(x))` of a warm-up, a jitted forward's loss are
        dropped on purpose); None otherwise."""
        fa = self.ctx.fa
        q = fa.qualify(call.func)
        if q in K.SANITIZERS:
            return True, K.COLLECTIVE_CALLS.get(q, f"`{q}()`")
        index = fa.index
        cands: list[str] = []
        if info.name in index.functions:
            cands = [info.name]
        elif evidence.BY_NAME_NOTE in info.collective and isinstance(call.func, cst.Attribute):
            cands = index.methods_by_name.get(call.func.attr.value, [])
        if not cands:
            return None
        rets = [index.returns.get(c) for c in cands]
        if all(r is not None and (r.glob or r.sanitized) and not r.host for r in rets) \
                and all(any(d in (index.collective.get(c) or "") for d in _EXCHANGES) for c in cands):
            return False, f"`{fa.code(call.func).strip()}()`"
        return None

    def _read_after(self, name: str, call: cst.Call, scope: cst.CSTNode) -> bool:
        """Whether `name`, a variable of `scope` (a function or the module: a parameter or assigned
        there), is read after `call` before it is bound again."""
        v = _NameUses({name})
        (scope.body if isinstance(scope, cst.FunctionDef) else scope).visit(v)
        params = {p.name.value for p in scope.params.params + scope.params.posonly_params + scope.params.kwonly_params} \
            if isinstance(scope, cst.FunctionDef) else set()
        if not v.bound and name not in params:
            return False  # (a class, a function, a global: not a value this code computed and meant to reduce)
        end = self.ctx.fa.pos(call)[2]
        for n, rebinds in v.uses:
            if self.line(n) > end:
                return not rebinds
        return False


def _constant_bindings(scope: cst.CSTNode, name: str, fa) -> bool:
    """Whether every binding of the local `name` in `scope` (not a parameter) is a plain
    assignment of a constant: literals, and array constructors on constants (`np.full((1,), 7,
    dtype=np.int32)`); it reads no variable."""
    if isinstance(scope, cst.FunctionDef) and name in {p.name.value for p in (
            *scope.params.params, *scope.params.posonly_params, *scope.params.kwonly_params)}:
        return False
    values: list = []
    ok = True

    class _Bindings(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Assign(self, node: cst.Assign) -> None:
            nonlocal ok
            for t in node.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    values.append(node.value)
                elif any(isinstance(x, cst.Name) and x.value == name for x in _names(t.target)):
                    ok = False  # (unpacked from something)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._other(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            nonlocal ok
            if isinstance(node.target, cst.Name) and node.target.value == name:
                if node.value is None:
                    return
                values.append(node.value)

        def visit_For(self, node: cst.For) -> None:
            self._other(node.target)

        def visit_AsName(self, node: cst.AsName) -> None:
            self._other(node.name)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._other(node.target)

        def _other(self, target) -> None:
            nonlocal ok
            if any(isinstance(x, cst.Name) and x.value == name for x in _names(target)):
                ok = False

    (scope.body if isinstance(scope, cst.FunctionDef) else scope).visit(_Bindings())
    return ok and bool(values) and all(_constant_expr(v, fa) for v in values)


def _names(node) -> list:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            out.append(n)
        elif isinstance(n, (cst.Tuple, cst.List)):
            stack.extend(e.value for e in n.elements)
        elif isinstance(n, cst.StarredElement):
            stack.append(n.value)
    return out


def _constant_expr(expr, fa) -> bool:
    """Literals, and array constructors and conversions on constants."""
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False", "None")
    if isinstance(expr, cst.Attribute):
        q = fa.qualify(expr)
        return q is not None and q not in fa.index.functions  # (`np.int32`: a library's constant)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return all(_constant_expr(e.value, fa) for e in expr.elements)
    if isinstance(expr, cst.UnaryOperation):
        return _constant_expr(expr.expression, fa)
    if isinstance(expr, cst.BinaryOperation):
        return _constant_expr(expr.left, fa) and _constant_expr(expr.right, fa)
    if isinstance(expr, cst.Call):
        q = fa.qualify(expr.func) or ""
        return (q in _CONSTANT_BUILTINS or q.startswith(_ARRAY_MODULES) and not q.startswith(_READING)) \
            and all(_constant_expr(a.value, fa) for a in expr.args)
    return False


# Array constructors on constant arguments make the same array everywhere (`np.full((1,), 7)`);
# not those that draw numbers or read files.
_ARRAY_MODULES = ("numpy.", "jax.numpy.")
_READING = ("numpy.random.", "numpy.load", "numpy.fromfile", "numpy.loadtxt", "numpy.genfromtxt", "numpy.memmap",
            "jax.numpy.load")
_CONSTANT_BUILTINS = frozenset({"int", "float", "bool", "str", "tuple", "list", "range"})
