"""Where a function's local variable is read and bound, in source order (libcst).

A fact the rules ask through `FileAnalysis.read_after`: is this variable read again after a
statement, before it is bound again (MCJ305: an argument still used after its reduction was
dropped)."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst


class _NameUses(cst.CSTVisitor):
    """Each use of `name` in a body, in the order Python runs them: (node, binds it); not in
    nested defs. An assignment's value is read before its targets are bound (`x = x + 1` reads
    `x` first); a target that unpacks (`a, x = f()`) or a loop's target binds, it reads nothing."""

    def __init__(self, name: str):
        self.name = name
        self.uses: list[tuple[cst.Name, bool]] = []
        self._seen: set[int] = set()  # (attribute and keyword names: no read)
        self.bound = False  # bound in the body (a variable of its own, not a class or a global)

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if target.value == self.name:
                self.uses.append((target, True))
                self.bound = True
        elif isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                self._target(e.value)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value)
        else:
            target.visit(self)  # (`obj.x = v`, `d[k] = v`: read `obj`, `d`, `k`)

    def visit_Assign(self, node: cst.Assign) -> bool:
        node.value.visit(self)
        for t in node.targets:
            self._target(t.target)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is None:
            return False  # (a bare annotation binds nothing)
        node.value.visit(self)
        self._target(node.target)
        return False

    def visit_For(self, node: cst.For) -> bool:
        node.iter.visit(self)
        self._target(node.target)
        node.body.visit(self)
        if node.orelse is not None:
            node.orelse.visit(self)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.bound = True  # (`x += v` reads `x`, then binds it)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._seen.add(id(node.attr))  # (`obj.x` reads no name `x`)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._seen.add(id(node.keyword))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name and id(node) not in self._seen:
            self.uses.append((node, False))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # (a nested def's names are its own)


def read_after(scope: cst.Module | cst.FunctionDef, name: str, end_line: int,
               line_of: Callable[[cst.CSTNode], int]) -> bool:
    """Whether `name`, a variable of `scope` (a parameter, or bound in its body), is read on a
    line after `end_line` before it is bound again; a name the scope never binds (a class, a
    function, a global) is not one of its values."""
    v = _NameUses(name)
    (scope.body if isinstance(scope, cst.FunctionDef) else scope).visit(v)
    if not v.bound and not (isinstance(scope, cst.FunctionDef) and name in {
            p.name.value for p in (*scope.params.params, *scope.params.posonly_params, *scope.params.kwonly_params)}):
        return False
    for n, binds in v.uses:
        if line_of(n) > end_line:
            return not binds
    return False
