"""A stdlib `ast` tree built from libcst's parse, for sources the host Python cannot parse.

The summary pass reads stdlib `ast` trees (its parser is ~3x faster than libcst's and it runs on
every file of a project). The host's parser knows only its own grammar: under Python 3.11 a
valid 3.12 file (`type X = ...`, `def f[T]()`, PEP 701 f-strings reusing their quotes) is a
syntax error. libcst's parser handles the 3.8-3.14 grammars, so such a file is parsed by libcst
and converted here, node for node, into the tree the newer host's `ast.parse` gives (fields the
host's `ast` lacks, such as type parameters, are dropped; a `type X = v` alias becomes the
assignment `X = v` where the host has no `ast.TypeAlias`). Positions carry each node's line and
column as libcst reports them.
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from mcjax_lint.analysis.positions import lean_positions

_BINOP = {
    cst.Add: ast.Add, cst.Subtract: ast.Sub, cst.Multiply: ast.Mult, cst.Divide: ast.Div,
    cst.FloorDivide: ast.FloorDiv, cst.Modulo: ast.Mod, cst.Power: ast.Pow, cst.LeftShift: ast.LShift,
    cst.RightShift: ast.RShift, cst.BitOr: ast.BitOr, cst.BitAnd: ast.BitAnd, cst.BitXor: ast.BitXor,
    cst.MatrixMultiply: ast.MatMult,
}
_AUGOP = {
    cst.AddAssign: ast.Add, cst.SubtractAssign: ast.Sub, cst.MultiplyAssign: ast.Mult, cst.DivideAssign: ast.Div,
    cst.FloorDivideAssign: ast.FloorDiv, cst.ModuloAssign: ast.Mod, cst.PowerAssign: ast.Pow,
    cst.LeftShiftAssign: ast.LShift, cst.RightShiftAssign: ast.RShift, cst.BitOrAssign: ast.BitOr,
    cst.BitAndAssign: ast.BitAnd, cst.BitXorAssign: ast.BitXor, cst.MatrixMultiplyAssign: ast.MatMult,
}
_UNARY = {cst.Minus: ast.USub, cst.Plus: ast.UAdd, cst.Not: ast.Not, cst.BitInvert: ast.Invert}
_CMP = {
    cst.Equal: ast.Eq, cst.NotEqual: ast.NotEq, cst.LessThan: ast.Lt, cst.LessThanEqual: ast.LtE,
    cst.GreaterThan: ast.Gt, cst.GreaterThanEqual: ast.GtE, cst.Is: ast.Is, cst.IsNot: ast.IsNot,
    cst.In: ast.In, cst.NotIn: ast.NotIn,
}
_CODE = cst.Module([])
_KEYWORD_CONSTANTS = {"None": None, "True": True, "False": False}
_CONVERSION = {None: -1, "s": ord("s"), "r": ord("r"), "a": ord("a")}


def _dotted(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    raise ValueError(f"not a dotted name: {type(node).__name__}")


def _text(raw: str, prefix: str) -> str:
    """The value of one literal part of an f-string (escapes decoded unless raw, `{{` kept single)."""
    raw = raw.replace("{{", "{").replace("}}", "}")
    if "r" in prefix.lower() or "\\" not in raw:
        return raw
    for q in ("'''", '"""'):
        if q not in raw:
            try:  # (a trailing sentinel: the text may end with the quote character)
                return ast.literal_eval(f"{q}{raw}_{q}")[:-1]
            except (SyntaxError, ValueError):
                break
    return raw


def _merged(parts: list[ast.expr]) -> list[ast.expr]:
    """Adjacent literal parts of an f-string are one constant, as the host's parser gives them."""
    out: list[ast.expr] = []
    for p in parts:
        if out and isinstance(p, ast.Constant) and isinstance(out[-1], ast.Constant):
            out[-1] = ast.copy_location(ast.Constant(out[-1].value + p.value), out[-1])
        elif not (isinstance(p, ast.Constant) and p.value == ""):
            out.append(p)
    return out


class _Converter:
    def __init__(self, module: cst.Module):
        self.pos = lean_positions(module)

    def at(self, out: ast.AST, node: cst.CSTNode) -> Any:
        r = self.pos.get(node)
        if r is not None:
            out.lineno, out.col_offset, out.end_lineno, out.end_col_offset = r
        return out

    # ------------------------------------------------------------ statements
    def body(self, suite) -> list[ast.stmt]:
        """Statements of a module, an indented block or a one-line suite."""
        stmts = suite.body if not isinstance(suite, (list, tuple)) else suite
        out: list[ast.stmt] = []
        for s in stmts:
            if isinstance(s, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                out.extend(self.stmt(x) for x in s.body)
            else:
                out.append(self.stmt(s))
        return out

    def stmt(self, node: cst.CSTNode) -> ast.stmt:
        m = getattr(self, "s_" + type(node).__name__, None)
        if m is None:
            raise ValueError(f"cannot convert statement {type(node).__name__}")
        return self.at(m(node), node)

    def s_Expr(self, n):
        return ast.Expr(self.ex(n.value))

    def s_Pass(self, n):
        return ast.Pass()

    def s_Break(self, n):
        return ast.Break()

    def s_Continue(self, n):
        return ast.Continue()

    def s_Return(self, n):
        return ast.Return(self.ex(n.value) if n.value is not None else None)

    def s_Raise(self, n):
        return ast.Raise(self.ex(n.exc) if n.exc is not None else None,
                         self.ex(n.cause.item) if n.cause is not None else None)

    def s_Assert(self, n):
        return ast.Assert(self.ex(n.test), self.ex(n.msg) if n.msg is not None else None)

    def s_Del(self, n):
        t = n.target
        targets = [e.value for e in t.elements] if isinstance(t, cst.Tuple) and not t.lpar else [t]
        return ast.Delete([self.ex(x, ast.Del()) for x in targets])

    def s_Global(self, n):
        return ast.Global([x.name.value for x in n.names])

    def s_Nonlocal(self, n):
        return ast.Nonlocal([x.name.value for x in n.names])

    def _alias(self, a: cst.ImportAlias) -> ast.alias:
        asname = a.asname.name.value if a.asname is not None else None
        return self.at(ast.alias(_dotted(a.name), asname), a)

    def s_Import(self, n):
        return ast.Import([self._alias(a) for a in n.names])

    def s_ImportFrom(self, n):
        names = [ast.alias("*", None)] if isinstance(n.names, cst.ImportStar) else [self._alias(a) for a in n.names]
        return ast.ImportFrom(_dotted(n.module) if n.module is not None else None, names, len(n.relative))

    def s_Assign(self, n):
        return ast.Assign([self.ex(t.target, ast.Store()) for t in n.targets], self.ex(n.value))

    def s_AnnAssign(self, n):
        simple = int(isinstance(n.target, cst.Name) and not n.target.lpar)
        return ast.AnnAssign(self.ex(n.target, ast.Store()), self.ex(n.annotation.annotation),
                             self.ex(n.value) if n.value is not None else None, simple)

    def s_AugAssign(self, n):
        return ast.AugAssign(self.ex(n.target, ast.Store()), _AUGOP[type(n.operator)](), self.ex(n.value))

    def s_TypeAlias(self, n):
        name = self.at(ast.Name(n.name.value, ast.Store()), n.name)
        if hasattr(ast, "TypeAlias"):
            return ast.TypeAlias(name, [], self.ex(n.value))
        return ast.Assign([name], self.ex(n.value))  # the host's grammar has no alias: its binding

    def _orelse(self, orelse) -> list[ast.stmt]:
        if orelse is None:
            return []
        if isinstance(orelse, cst.If):
            return [self.stmt(orelse)]
        return self.body(orelse.body)

    def s_If(self, n):
        return ast.If(self.ex(n.test), self.body(n.body), self._orelse(n.orelse))

    def s_While(self, n):
        return ast.While(self.ex(n.test), self.body(n.body), self._orelse(n.orelse))

    def s_For(self, n):
        cls = ast.AsyncFor if n.asynchronous is not None else ast.For
        return cls(self.ex(n.target, ast.Store()), self.ex(n.iter), self.body(n.body), self._orelse(n.orelse))

    def s_With(self, n):
        cls = ast.AsyncWith if n.asynchronous is not None else ast.With
        items = [ast.withitem(self.ex(i.item), self.ex(i.asname.name, ast.Store()) if i.asname is not None else None)
                 for i in n.items]
        return cls(items, self.body(n.body))

    def _handler(self, h) -> ast.excepthandler:
        name = h.name.name.value if h.name is not None else None
        return self.at(ast.ExceptHandler(self.ex(h.type) if h.type is not None else None, name, self.body(h.body)), h)

    def s_Try(self, n):
        final = self.body(n.finalbody.body) if n.finalbody is not None else []
        return ast.Try(self.body(n.body), [self._handler(h) for h in n.handlers], self._orelse(n.orelse), final)

    def s_TryStar(self, n):
        cls = getattr(ast, "TryStar", ast.Try)
        final = self.body(n.finalbody.body) if n.finalbody is not None else []
        return cls(self.body(n.body), [self._handler(h) for h in n.handlers], self._orelse(n.orelse), final)

    def s_FunctionDef(self, n):
        cls = ast.AsyncFunctionDef if n.asynchronous is not None else ast.FunctionDef
        out = cls(n.name.value, self.arguments(n.params), self.body(n.body),
                  [self.ex(d.decorator) for d in n.decorators],
                  self.ex(n.returns.annotation) if n.returns is not None else None)
        out.type_comment = None
        if "type_params" in cls._fields:
            out.type_params = []
        return out

    def s_ClassDef(self, n):
        bases, keywords = self._call_args([*n.bases, *n.keywords])
        out = ast.ClassDef(n.name.value, bases, keywords, self.body(n.body), [self.ex(d.decorator) for d in n.decorators])
        if "type_params" in ast.ClassDef._fields:
            out.type_params = []
        return out

    def s_Match(self, n):
        cases = [ast.match_case(self.pattern(c.pattern), self.ex(c.guard) if c.guard is not None else None,
                                self.body(c.body)) for c in n.cases]
        return ast.Match(self.ex(n.subject), cases)

    def pattern(self, p) -> ast.pattern:
        if isinstance(p, cst.MatchAs):
            out = ast.MatchAs(self.pattern(p.pattern) if p.pattern is not None else None,
                              p.name.value if p.name is not None else None)
        elif isinstance(p, cst.MatchSingleton):
            out = ast.MatchSingleton(ast.literal_eval(p.value.value))
        elif isinstance(p, cst.MatchValue):
            out = ast.MatchValue(self.ex(p.value))
        elif isinstance(p, cst.MatchStar):
            out = ast.MatchStar(p.name.value if p.name is not None else None)
        elif isinstance(p, (cst.MatchList, cst.MatchTuple)):
            out = ast.MatchSequence([self.pattern(e.value if isinstance(e, cst.MatchSequenceElement) else e)
                                     for e in p.patterns])
        elif isinstance(p, cst.MatchOr):
            out = ast.MatchOr([self.pattern(e.pattern) for e in p.patterns])
        elif isinstance(p, cst.MatchMapping):
            out = ast.MatchMapping([self.ex(e.key) for e in p.elements], [self.pattern(e.pattern) for e in p.elements],
                                   p.rest.value if p.rest is not None else None)
        elif isinstance(p, cst.MatchClass):
            out = ast.MatchClass(self.ex(p.cls), [self.pattern(e.value) for e in p.patterns],
                                 [e.key.value for e in p.kwds], [self.pattern(e.pattern) for e in p.kwds])
        else:
            raise ValueError(f"cannot convert pattern {type(p).__name__}")
        return self.at(out, p)

    # ------------------------------------------------------------ parameters
    def _arg(self, p: cst.Param) -> ast.arg:
        ann = self.ex(p.annotation.annotation) if p.annotation is not None else None
        return self.at(ast.arg(p.name.value, ann), p)

    def arguments(self, ps: cst.Parameters) -> ast.arguments:
        pos = list(ps.posonly_params) + list(ps.params)
        defaults = [self.ex(p.default) for p in pos if p.default is not None]
        vararg = self._arg(ps.star_arg) if isinstance(ps.star_arg, cst.Param) else None
        kwarg = self._arg(ps.star_kwarg) if ps.star_kwarg is not None else None
        return ast.arguments(
            posonlyargs=[self._arg(p) for p in ps.posonly_params], args=[self._arg(p) for p in ps.params],
            vararg=vararg, kwonlyargs=[self._arg(p) for p in ps.kwonly_params],
            kw_defaults=[self.ex(p.default) if p.default is not None else None for p in ps.kwonly_params],
            kwarg=kwarg, defaults=defaults)

    # ------------------------------------------------------------ expressions
    def ex(self, node: cst.CSTNode, ctx: ast.expr_context | None = None) -> ast.expr:
        m = getattr(self, "e_" + type(node).__name__, None)
        if m is None:
            raise ValueError(f"cannot convert expression {type(node).__name__}")
        return self.at(m(node, ctx or ast.Load()), node)

    def e_Name(self, n, ctx):
        if n.value in _KEYWORD_CONSTANTS:
            return ast.Constant(_KEYWORD_CONSTANTS[n.value])
        return ast.Name(n.value, ctx)

    def e_Attribute(self, n, ctx):
        return ast.Attribute(self.ex(n.value), n.attr.value, ctx)

    def e_Integer(self, n, ctx):
        return ast.Constant(n.evaluated_value)

    e_Float = e_Imaginary = e_Integer

    def e_Ellipsis(self, n, ctx):
        return ast.Constant(...)

    def e_SimpleString(self, n, ctx):
        return ast.Constant(n.evaluated_value)

    def _fstring_parts(self, n) -> list[ast.expr]:
        prefix = n.prefix
        out: list[ast.expr] = []
        for part in n.parts:
            if isinstance(part, (cst.FormattedStringText, getattr(cst, "TemplatedStringText", cst.FormattedStringText))):
                out.append(self.at(ast.Constant(_text(part.value, prefix)), part))
                continue
            spec = None
            if part.format_spec is not None:
                spec = ast.JoinedStr(self._fstring_parts_of(part.format_spec, prefix))
            conversion = _CONVERSION.get(part.conversion, -1)
            if getattr(part, "equal", None) is not None:
                # `f"{x=}"`: the expression's text, then its repr unless a conversion or spec is given.
                code = _CODE.code_for_node
                out.append(self.at(ast.Constant(code(part.whitespace_before_expression) + code(part.expression)
                                                + code(part.whitespace_after_expression) + code(part.equal)), part))
                if conversion == -1 and spec is None:
                    conversion = ord("r")
            out.append(self.at(ast.FormattedValue(self.ex(part.expression), conversion, spec), part))
        return out

    def _fstring_parts_of(self, parts, prefix: str) -> list[ast.expr]:
        class _P:  # the format spec's parts, read like an f-string's
            pass
        p = _P()
        p.prefix, p.parts = prefix, parts
        return self._fstring_parts(p)

    def e_FormattedString(self, n, ctx):
        return ast.JoinedStr(_merged(self._fstring_parts(n)))

    e_TemplatedString = e_FormattedString  # 3.14 t-strings: their parts, as an f-string's

    def e_ConcatenatedString(self, n, ctx):
        parts: list[ast.expr] = []
        joined = False
        for side in (n.left, n.right):
            v = self.ex(side)
            joined = joined or isinstance(v, ast.JoinedStr)
            parts.extend(v.values if isinstance(v, ast.JoinedStr) else [v])
        if not joined:  # (an f-string without fields still makes the whole a JoinedStr)
            return ast.Constant(parts[0].value + "".join(p.value for p in parts[1:]) if isinstance(parts[0].value, str)
                                else b"".join(p.value for p in parts))
        return ast.JoinedStr(_merged(parts))

    def _elts(self, elements, ctx) -> list[ast.expr]:
        out = []
        for e in elements:
            if isinstance(e, cst.StarredElement):
                out.append(self.at(ast.Starred(self.ex(e.value, ctx), ctx), e))
            else:
                out.append(self.ex(e.value, ctx))
        return out

    def e_Tuple(self, n, ctx):
        return ast.Tuple(self._elts(n.elements, ctx), ctx)

    def e_List(self, n, ctx):
        return ast.List(self._elts(n.elements, ctx), ctx)

    def e_Set(self, n, ctx):
        return ast.Set(self._elts(n.elements, ast.Load()))

    def e_Dict(self, n, ctx):
        keys: list[ast.expr | None] = []
        values = []
        for e in n.elements:
            keys.append(self.ex(e.key) if isinstance(e, cst.DictElement) else None)
            values.append(self.ex(e.value))
        return ast.Dict(keys, values)

    def e_StarredElement(self, n, ctx):
        return ast.Starred(self.ex(n.value, ctx), ctx)

    def e_Subscript(self, n, ctx):
        items = []
        for el in n.slice:
            s = el.slice
            if isinstance(s, cst.Slice):
                items.append(self.at(ast.Slice(self.ex(s.lower) if s.lower is not None else None,
                                               self.ex(s.upper) if s.upper is not None else None,
                                               self.ex(s.step) if s.step is not None else None), s))
            elif getattr(s, "star", None):
                items.append(self.at(ast.Starred(self.ex(s.value), ast.Load()), s))
            else:
                items.append(self.ex(s.value))
        sl = items[0] if len(items) == 1 and not isinstance(items[0], ast.Starred) and not isinstance(n.slice[0].comma, cst.Comma) \
            else ast.Tuple(items, ast.Load())
        return ast.Subscript(self.ex(n.value), sl, ctx)

    def e_Call(self, n, ctx):
        args, keywords = self._call_args(n.args)
        return ast.Call(self.ex(n.func), args, keywords)

    def _call_args(self, arguments) -> tuple[list[ast.expr], list[ast.keyword]]:
        args: list[ast.expr] = []
        keywords: list[ast.keyword] = []
        for a in arguments:
            if a.keyword is not None:
                keywords.append(self.at(ast.keyword(a.keyword.value, self.ex(a.value)), a))
            elif a.star == "**":
                keywords.append(self.at(ast.keyword(None, self.ex(a.value)), a))
            elif a.star == "*":
                args.append(self.at(ast.Starred(self.ex(a.value), ast.Load()), a))
            else:
                args.append(self.ex(a.value))
        return args, keywords

    def e_UnaryOperation(self, n, ctx):
        return ast.UnaryOp(_UNARY[type(n.operator)](), self.ex(n.expression))

    def e_BinaryOperation(self, n, ctx):
        return ast.BinOp(self.ex(n.left), _BINOP[type(n.operator)](), self.ex(n.right))

    def e_BooleanOperation(self, n, ctx):
        op = ast.And if isinstance(n.operator, cst.And) else ast.Or
        left = self.ex(n.left)
        values = left.values if isinstance(left, ast.BoolOp) and isinstance(left.op, op) and not n.left.lpar else [left]
        return ast.BoolOp(op(), [*values, self.ex(n.right)])

    def e_Comparison(self, n, ctx):
        return ast.Compare(self.ex(n.left), [_CMP[type(c.operator)]() for c in n.comparisons],
                           [self.ex(c.comparator) for c in n.comparisons])

    def e_IfExp(self, n, ctx):
        return ast.IfExp(self.ex(n.test), self.ex(n.body), self.ex(n.orelse))

    def e_Lambda(self, n, ctx):
        return ast.Lambda(self.arguments(n.params), self.ex(n.body))

    def e_NamedExpr(self, n, ctx):
        return ast.NamedExpr(self.ex(n.target, ast.Store()), self.ex(n.value))

    def e_Await(self, n, ctx):
        return ast.Await(self.ex(n.expression))

    def e_Yield(self, n, ctx):
        if isinstance(n.value, cst.From):
            return ast.YieldFrom(self.ex(n.value.item))
        return ast.Yield(self.ex(n.value) if n.value is not None else None)

    def _generators(self, f: cst.CompFor | None) -> list[ast.comprehension]:
        out = []
        while f is not None:
            out.append(ast.comprehension(self.ex(f.target, ast.Store()), self.ex(f.iter),
                                         [self.ex(i.test) for i in f.ifs], int(f.asynchronous is not None)))
            f = f.inner_for_in
        return out

    def e_ListComp(self, n, ctx):
        return ast.ListComp(self.ex(n.elt), self._generators(n.for_in))

    def e_SetComp(self, n, ctx):
        return ast.SetComp(self.ex(n.elt), self._generators(n.for_in))

    def e_GeneratorExp(self, n, ctx):
        return ast.GeneratorExp(self.ex(n.elt), self._generators(n.for_in))

    def e_DictComp(self, n, ctx):
        return ast.DictComp(self.ex(n.key), self.ex(n.value), self._generators(n.for_in))


def to_ast(module: cst.Module) -> ast.Module:
    """The stdlib `ast` tree of a libcst module, as the host's `ast.parse` would give it."""
    c = _Converter(module)
    out = ast.Module(c.body(module.body), [])
    return ast.fix_missing_locations(out)
