"""The precise pass's reader: a libcst node as `semantics`' normalized tuple."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.analysis.reader import dispatch, read_assert, same_fields  # noqa: F401 (a reader's part)

_OPS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
        cst.Modulo: "%", cst.Power: "**", cst.LeftShift: "<<", cst.RightShift: ">>", cst.BitOr: "|",
        cst.BitAnd: "&", cst.BitXor: "^", cst.MatrixMultiply: "@", cst.Minus: "-", cst.Plus: "+", cst.Not: "not",
        cst.BitInvert: "~"}


def _comp(n) -> tuple:
    gens, ifs = [], []
    f = n.for_in
    while f is not None:
        gens.append((f.target, f.iter))
        ifs += [c.test for c in f.ifs]
        f = f.inner_for_in
    return ("comp", n.elt, gens, ifs)


def _elements(n) -> list:
    # (a starred element is itself, as in `ast`: `(*xs, 1)` is not known to hold numbers)
    return [e if isinstance(e, cst.StarredElement) else e.value for e in n.elements]


_CMP = {cst.Equal: "==", cst.NotEqual: "!=", cst.Is: "is", cst.IsNot: "is not", cst.LessThan: "<",
        cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">="}
_AUG = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*", cst.DivideAssign: "/",
        cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**", cst.BitOrAssign: "|",
        cst.BitAndAssign: "&", cst.BitXorAssign: "^", cst.LeftShiftAssign: "<<", cst.RightShiftAssign: ">>",
        cst.MatrixMultiplyAssign: "@"}


def _compare(n: cst.Comparison) -> tuple:
    if len(n.comparisons) != 1 or type(n.comparisons[0].operator) not in _CMP:
        return ("other", "comparison")
    c = n.comparisons[0]
    return ("compare", n.left, _CMP[type(c.operator)], c.comparator)


def _integer(n: cst.Integer) -> tuple:
    try:
        return ("number", repr(int(n.value, 0)))
    except ValueError:  # (an odd literal: a number of unknown value)
        return ("number", None)


def _string(n: cst.SimpleString) -> tuple:
    try:
        v = n.evaluated_value
    except Exception:  # noqa: BLE001 - an odd literal is just not a known string
        return ("other", "simplestring")
    return ("string", v) if isinstance(v, str) else ("text",)


_READ = {
    cst.SimpleString: _string,
    cst.Integer: _integer,
    cst.Float: lambda n: ("number", None),
    cst.Name: lambda n: ("name", n.value),
    cst.Attribute: lambda n: ("attr", n.value, n.attr.value),
    cst.Call: lambda n: ("call", n.func, [a.value for a in n.args if a.keyword is None and not a.star],
                         [a.value for a in n.args]),
    cst.FormattedString: lambda n: ("text",),
    cst.ConcatenatedString: lambda n: ("text",),
    cst.Dict: lambda n: ("dict", [e.value for e in n.elements]),
    cst.Tuple: lambda n: ("tuple", _elements(n)),
    cst.List: lambda n: ("seq", _elements(n)),
    cst.Set: lambda n: ("seq", _elements(n)),
    cst.ListComp: _comp,
    cst.SetComp: _comp,
    cst.GeneratorExp: _comp,
    cst.BinaryOperation: lambda n: ("binop", _OPS[type(n.operator)], n.left, n.right),
    cst.UnaryOperation: lambda n: ("unary", _OPS[type(n.operator)], n.expression),
    cst.BooleanOperation: lambda n: ("boolop", "and" if isinstance(n.operator, cst.And) else "or", [n.left, n.right]),
    cst.Comparison: _compare,
    # statements (`semantics.order_free_accumulators`)
    cst.Assign: lambda n: ("assign", [t.target for t in n.targets], n.value),
    cst.AugAssign: lambda n: ("augassign", n.target, _AUG.get(type(n.operator), "?"), n.value),
}


def last_statement(body) -> str | None:
    """The kind of a block's last statement, lowercased (see read_ast.last_statement): on a line
    of several (`x = 1; return`), the last of them."""
    stmts = getattr(body, "body", None) or []
    if not stmts:
        return None
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return type(last.body[-1]).__name__.lower() if last.body else None
    return type(last).__name__.lower()


def read_try(n: cst.Try) -> tuple:
    """A `try` statement as `semantics.StatementRules.st_Try` reads it (see read_ast.read_try)."""
    handlers = [(h.type, h.name.name.value if h.name is not None and isinstance(h.name.name, cst.Name) else None, h.body)
                for h in n.handlers]
    return (n.body, handlers, n.orelse.body if n.orelse else None, n.finalbody.body if n.finalbody else None)


def read_with(n: cst.With) -> tuple:
    """A `with` statement as `semantics.StatementRules.st_With` reads it (see read_ast.read_with)."""
    return ([(i.item, i.asname.name if i.asname is not None else None) for i in n.items], n.body)


def read_while(n: cst.While) -> tuple:
    """A `while` statement as `semantics.StatementRules.st_While` reads it (see read_ast.read_while)."""
    return (n.test, n.body, n.orelse.body if n.orelse is not None else None)


def read_for(n: cst.For) -> tuple:
    """A `for` statement as `semantics.StatementRules.st_For` reads it (see read_ast.read_for)."""
    return (n.target, n.iter, n.body, n.orelse.body if n.orelse is not None else None)


def read_comprehension(n) -> tuple:
    """A comprehension or generator as `semantics.StatementRules.comprehension` reads it (see
    read_ast.read_comprehension)."""
    gens = []
    f = n.for_in
    while f is not None:
        gens.append((f.target, f.iter, [(c.test, c) for c in f.ifs], f))
        f = f.inner_for_in
    return gens, [n.key, n.value] if isinstance(n, cst.DictComp) else [n.elt]


def read_lambda(n) -> tuple | None:
    """A lambda (see read_ast.read_lambda)."""
    if type(n) is not cst.Lambda:
        return None
    ps = n.params
    positional = [p.name.value for p in (*ps.posonly_params, *ps.params)]
    rest = [p.name.value for p in ps.kwonly_params] + [p.name.value for p in (ps.star_arg, ps.star_kwarg)
                                                        if isinstance(p, cst.Param)]
    return positional, positional + rest, n.body


def name_parts(n) -> tuple | None:
    """A name as (None, id), an attribute as (value, attr), else None (see read_ast.name_parts)."""
    t = type(n)
    if t is cst.Name:
        return None, n.value
    if t is cst.Attribute:
        return n.value, n.attr.value
    return None


def read_match(n) -> tuple:
    """A `match` statement (see read_ast.read_match)."""
    return (n.subject, [(c.guard, c.body, c.pattern) for c in n.cases])


def read_pattern(p) -> tuple:
    """A `case` pattern (see read_ast.read_pattern)."""
    if isinstance(p, cst.MatchValue):
        return ("value", p.value)
    if isinstance(p, (cst.MatchList, cst.MatchTuple)):
        return ("seq", [e.value if isinstance(e, cst.MatchSequenceElement) else e for e in p.patterns])
    if isinstance(p, cst.MatchOr):
        return ("or", [e.pattern for e in p.patterns])
    if isinstance(p, cst.MatchAs) and p.pattern is not None:
        return read_pattern(p.pattern)
    return ("other",)


def read_subscript(n: cst.Subscript) -> tuple:
    """A subscript (see read_ast.read_subscript)."""
    return (n.value, [("index", e.slice.value) if isinstance(e.slice, cst.Index)
                      else ("slice", e.slice.lower, e.slice.upper, e.slice.step) for e in n.slice])


def first_argument(n: cst.Call) -> tuple:
    """A call's first positional argument (see read_ast.first_argument)."""
    a = next((a for a in n.args if a.keyword is None and a.star != "**"), None)
    if a is None:
        return None, False
    return (a, True) if a.star else (a.value, False)


def keyword_names(n: cst.Call) -> set[str]:
    """The keywords a call passes by name (see read_ast.keyword_names)."""
    return {a.keyword.value for a in n.args if a.keyword is not None}


def callee_receiver(n: cst.Call):
    """The receiver of a method call (see read_ast.callee_receiver)."""
    return n.func.value if isinstance(n.func, cst.Attribute) else None


def keyword_arguments(n: cst.Call) -> list[tuple[str | None, object]]:
    """A call's keyword arguments (see read_ast.keyword_arguments)."""
    return [(a.keyword.value if a.keyword is not None else None, a.value) for a in n.args
            if a.keyword is not None or a.star == "**"]


def positional_arguments(n: cst.Call) -> list:
    """A call's positional argument nodes (see read_ast.positional_arguments)."""
    return [a if a.star else a.value for a in n.args if a.keyword is None and a.star != "**"]


def argument(n: cst.Call, position: int, keyword: str):
    """The argument a call passes at `position` or by the name `keyword` (see read_ast.argument)."""
    positional = [a for a in n.args if a.keyword is None]
    if len(positional) > position and not any(a.star for a in positional[:position + 1]):
        return positional[position].value
    return next((a.value for a in n.args if a.keyword is not None and a.keyword.value == keyword), None)


_READ.update(same_fields(cst))
read = dispatch(_READ)


def statements(block) -> list:
    """The statements of a block, simple statements one by one (`read` of an `if` gives its
    body and its `elif`/`else` as blocks)."""
    if block is None:
        return []
    if isinstance(block, cst.If):
        return [block]
    if isinstance(block, cst.Else):
        block = block.body
    out = []
    for s in block.body:
        out.extend(s.body if isinstance(s, cst.SimpleStatementLine) else [s])
    return out


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # (not the attribute's name)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # (not the keyword)
        return False


def names_in(node) -> set[str]:
    """The variable names an expression reads (not attribute or keyword names)."""
    v = _Names()
    node.visit(v)
    return v.names


def same(a, b) -> bool:
    """Whether two expressions are written alike."""
    return a.deep_equals(b)
