"""Fast structural children of libcst nodes.

`CSTNode.children` runs a visitor over the node to collect them, which dominated the analysis'
own walks on real code. The analysis only needs the structural children (no whitespace,
parentheses or punctuation), in field order, which a per-type list of dataclass fields gives.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

_NOT_STRUCTURAL = {"lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators", "header",
                   "footer", "indent", "trailing_whitespace", "equal", "colon", "dot", "star", "operator",
                   "asynchronous", "lbracket", "rbracket", "lbrace", "rbrace", "newline", "prefix", "quote",
                   "value_if_string"}
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(t: type) -> tuple[str, ...]:
    f = _FIELDS.get(t)
    if f is None:
        f = _FIELDS[t] = tuple(x.name for x in dataclasses.fields(t)
                               if x.name not in _NOT_STRUCTURAL and "whitespace" not in x.name)
    return f


# Nodes whose bodies run elsewhere (walks skip them). Node classes are final, so walks test
# `type(n) in OWN_SCOPE`: `isinstance` on libcst's ABCs takes the slow path on every node.
OWN_SCOPE = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})

_IS_NODE: dict[type, bool] = {}  # `isinstance(x, CSTNode)` per type: the ABC check is slow


def _is_node(t: type) -> bool:
    r = _IS_NODE.get(t)
    if r is None:
        r = _IS_NODE[t] = issubclass(t, cst.CSTNode)
    return r


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    for name in _fields(type(node)):
        v = getattr(node, name)
        t = type(v)
        if t is list or t is tuple:
            out.extend(x for x in v if _is_node(type(x)))
        elif _is_node(t):
            out.append(v)
    return out


def walk(node: cst.CSTNode):
    """Every node under `node` (itself included)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(children(n))


def walk_own_scope(node: cst.CSTNode):
    """Every node under `node` (itself included), nested scopes (functions, classes, lambdas)
    left out."""
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) in OWN_SCOPE:
            continue
        yield n
        stack.extend(children(n))
