"""The summary pass's reader: a stdlib `ast` node as `semantics`' normalized tuple."""

from __future__ import annotations

import ast

from mcjax_lint.analysis.reader import dispatch, read_assert, same_fields  # noqa: F401 (a reader's part)

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
        ast.MatMult: "@", ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~"}


def _constant(n: ast.Constant) -> tuple:
    v = n.value
    if isinstance(v, str):
        return ("string", v)
    if isinstance(v, bytes):
        return ("text",)
    if v is None or isinstance(v, bool):
        return ("name", repr(v))  # (libcst reads True/False/None as names)
    if isinstance(v, int):
        return ("number", repr(v))
    return ("number", None) if isinstance(v, float) else ("other", "constant")


_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
        ast.GtE: ">="}


def _compare(n: ast.Compare) -> tuple:
    if len(n.ops) != 1 or type(n.ops[0]) not in _CMP:
        return ("other", "compare")
    return ("compare", n.left, _CMP[type(n.ops[0])], n.comparators[0])


def _comp(n) -> tuple:
    return ("comp", n.elt, [(g.target, g.iter) for g in n.generators], [t for g in n.generators for t in g.ifs])


_READ = {
    ast.Constant: _constant,
    ast.Name: lambda n: ("name", n.id),
    ast.Attribute: lambda n: ("attr", n.value, n.attr),
    ast.Call: lambda n: ("call", n.func, [a for a in n.args if not isinstance(a, ast.Starred)],
                         [a.value if isinstance(a, ast.Starred) else a for a in n.args] + [k.value for k in n.keywords]),
    ast.JoinedStr: lambda n: ("text",),
    ast.Dict: lambda n: ("dict", n.values),
    ast.Tuple: lambda n: ("tuple", n.elts),
    ast.List: lambda n: ("seq", n.elts),
    ast.Set: lambda n: ("seq", n.elts),
    ast.ListComp: _comp,
    ast.SetComp: _comp,
    ast.GeneratorExp: _comp,
    ast.BinOp: lambda n: ("binop", _OPS[type(n.op)], n.left, n.right),
    ast.UnaryOp: lambda n: ("unary", _OPS[type(n.op)], n.operand),
    ast.BoolOp: lambda n: ("boolop", "and" if isinstance(n.op, ast.And) else "or", n.values),
    ast.Compare: _compare,
    # statements (`semantics.order_free_accumulators`)
    ast.Assign: lambda n: ("assign", n.targets, n.value),
    ast.AugAssign: lambda n: ("augassign", n.target, _OPS[type(n.op)], n.value),
}


def last_statement(body: list | None) -> str | None:
    """The kind of a block's last statement, lowercased ("return", "assign", ...), None if empty."""
    return type(body[-1]).__name__.lower() if body else None


def read_try(n: ast.Try) -> tuple:
    """A `try` statement as `semantics.StatementRules.st_Try` reads it: (body, [(handler type
    or None, name bound or None, handler body)], else body or None, finally body or None)."""
    return (n.body, [(h.type, h.name, h.body) for h in n.handlers], n.orelse or None, n.finalbody or None)


def read_with(n: ast.With) -> tuple:
    """A `with` statement as `semantics.StatementRules.st_With` reads it: ([(context expression,
    target or None)], body)."""
    return ([(i.context_expr, i.optional_vars) for i in n.items], n.body)


def read_while(n: ast.While) -> tuple:
    """A `while` statement as `semantics.StatementRules.st_While` reads it: (test, body, else
    body or None)."""
    return (n.test, n.body, n.orelse or None)


def read_for(n: ast.For) -> tuple:
    """A `for` statement as `semantics.StatementRules.st_For` reads it: (target, iterable, body,
    else body or None)."""
    return (n.target, n.iter, n.body, n.orelse or None)


def read_comprehension(n) -> tuple:
    """A comprehension or generator as `semantics.StatementRules.comprehension` reads it:
    ([(target, iterable, [(filter test, node its decision is recorded on)], node of the `for`)],
    element expressions: [elt] or [key, value])."""
    gens = [(g.target, g.iter, [(t, t) for t in g.ifs], g) for g in n.generators]
    return gens, [n.key, n.value] if isinstance(n, ast.DictComp) else [n.elt]


def read_lambda(n) -> tuple | None:
    """A lambda as `semantics.StatementRules.leaf_map` reads it: ([positional parameter names],
    [every parameter name], body); None for anything else."""
    if type(n) is not ast.Lambda:
        return None
    a = n.args
    positional = [p.arg for p in a.posonlyargs + a.args]
    rest = [p.arg for p in a.kwonlyargs] + [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return positional, positional + rest, n.body


def name_parts(n) -> tuple | None:
    """A name as (None, id), an attribute as (value, attr), else None: cheaper than `read` where
    only dotted names matter (`StatementRules.qualify`)."""
    t = type(n)
    if t is ast.Name:
        return None, n.id
    if t is ast.Attribute:
        return n.value, n.attr
    return None


def read_match(n) -> tuple:
    """A `match` statement as `semantics.StatementRules.st_Match` reads it: (subject, [(guard or
    None, body, pattern)])."""
    return (n.subject, [(c.guard, c.body, c.pattern) for c in n.cases])


def read_pattern(p) -> tuple:
    """A `case` pattern as `semantics.match_singletons` reads it: ("value", expression) for a
    literal (`case 1:`), ("seq", [pattern]) for a sequence (`case (1, 0):`), ("or", [pattern])
    for alternatives (`case 0 | 1:`), the pattern of `case P as name`, else ("other",)."""
    if isinstance(p, ast.MatchValue):
        return ("value", p.value)
    if isinstance(p, ast.MatchSequence):
        return ("seq", p.patterns)
    if isinstance(p, ast.MatchOr):
        return ("or", p.patterns)
    if isinstance(p, ast.MatchAs) and p.pattern is not None:
        return read_pattern(p.pattern)
    return ("other",)


def read_subscript(n: ast.Subscript) -> tuple:
    """A subscript as `semantics.StatementRules.ev_Subscript` reads it: (value, [("index", key) or
    ("slice", lower, upper, step), ...]), one entry per comma-separated key."""
    keys = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
    return (n.value, [("slice", k.lower, k.upper, k.step) if isinstance(k, ast.Slice) else ("index", k) for k in keys])


def first_argument(n: ast.Call) -> tuple:
    """A call's first positional argument as (value, False), a starred one as (the `*xs` node,
    True), none as (None, False)."""
    if not n.args:
        return None, False
    return (n.args[0], True) if isinstance(n.args[0], ast.Starred) else (n.args[0], False)


def keyword_names(n: ast.Call) -> set[str]:
    """The keywords a call passes by name (not `**kwargs`)."""
    return {k.arg for k in n.keywords if k.arg is not None}


def callee_receiver(n: ast.Call):
    """The receiver of a method call (`x` of `x.m(...)`), None for a call of anything else."""
    return n.func.value if isinstance(n.func, ast.Attribute) else None


def keyword_arguments(n: ast.Call) -> list[tuple[str | None, object]]:
    """A call's keyword arguments as (name, value); `**kwargs` as (None, its value)."""
    return [(k.arg, k.value) for k in n.keywords]


def positional_arguments(n: ast.Call) -> list:
    """A call's positional argument nodes (a starred one as its `*xs` node)."""
    return list(n.args)


def argument(n: ast.Call, position: int, keyword: str):
    """The argument a call passes at `position` (not starred) or by the name `keyword`, None if
    neither."""
    if len(n.args) > position and not any(isinstance(a, ast.Starred) for a in n.args[:position + 1]):
        return n.args[position]
    return next((k.value for k in n.keywords if k.arg == keyword), None)


_READ.update(same_fields(ast))
read = dispatch(_READ)


def statements(block) -> list:
    """The statements of a block (a statement list; `read` of an `if` gives its arms as blocks)."""
    return list(block or ())


def names_in(node) -> set[str]:
    """The variable names an expression reads (not attribute or keyword names)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def same(a, b) -> bool:
    """Whether two expressions are written alike."""
    return ast.dump(a) == ast.dump(b)
