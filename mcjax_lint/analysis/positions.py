"""A leaner libcst position provider: the same ranges as `PositionProvider`, for fewer nodes.

libcst's `PositionProvider` records a `CodeRange` for every node (whitespace, commas, operators
included) and splits every token with a regex; on real code that costs ~7x the code generation
it rides on. The analysis needs positions of expressions, statements and a few clauses only, so
this provider skips whitespace/punctuation nodes and updates line/column with plain string
operations. For the nodes it records, the ranges equal `PositionProvider`'s.
"""

from __future__ import annotations

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition
from libcst.metadata.base_provider import BaseMetadataProvider

# Node types whose positions nobody asks for (whitespace, punctuation, operators).
_SKIP = frozenset({
    cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline,
    cst.Comment, cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.LeftParen, cst.RightParen,
    cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.AssignTarget,
    cst.ImportAlias, cst.AsName, cst.Annotation, cst.ParamStar, cst.ParamSlash, cst.Decorator,
    cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power, cst.MatrixMultiply,
    cst.LeftShift, cst.RightShift, cst.BitAnd, cst.BitOr, cst.BitXor, cst.And, cst.Or, cst.Not, cst.BitInvert,
    cst.Minus, cst.Plus, cst.Equal, cst.NotEqual, cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
    cst.GreaterThanEqual, cst.Is, cst.IsNot, cst.In, cst.NotIn, cst.AddAssign, cst.SubtractAssign,
    cst.MultiplyAssign, cst.DivideAssign, cst.ModuloAssign, cst.PowerAssign, cst.FloorDivideAssign,
    cst.BitAndAssign, cst.BitOrAssign, cst.BitXorAssign, cst.LeftShiftAssign, cst.RightShiftAssign,
    cst.MatrixMultiplyAssign, cst.ImportStar, cst.BaseParenthesizableWhitespace,
})


class Range(tuple):
    """(start line, start column, end line, end column) with `CodeRange`-like accessors."""

    __slots__ = ()

    @property
    def start(self) -> CodePosition:
        return CodePosition(self[0], self[1])

    @property
    def end(self) -> CodePosition:
        return CodePosition(self[2], self[3])


class _Syntactic:
    """`record_syntactic_position` as a plain context manager (a generator-based one costs more
    than the code generation it wraps)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state, node, start_node, end_node):
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self):
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc):
        st = self.state
        computed = st.provider._computed
        s = self.start
        if self.start_node is not None and self.start_node in computed:
            r = computed[self.start_node]
            s = (r[0], r[1])
        e = (st.line, st.column)
        if self.end_node is not None and self.end_node in computed:
            r = computed[self.end_node]
            e = (r[2], r[3])
        computed[self.node] = Range((s[0], s[1], e[0], e[1]))
        return False


class _State(CodegenState):
    __slots__ = ("provider", "line", "column", "_stack")

    def __init__(self, module: cst.Module, provider: LeanPositionProvider):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.provider = provider
        self.line = 1
        self.column = 0
        self._stack: list = []

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            value = value.replace("\r\n", "\n").replace("\r", "\n")
            self.line += value.count("\n")
            self.column = len(value) - value.rfind("\n") - 1
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(None if type(node) in _SKIP else (self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if start is not None:
            computed = self.provider._computed
            if node not in computed:
                computed[node] = Range((start[0], start[1], self.line, self.column))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


class LeanPositionProvider(BaseMetadataProvider[Range]):
    """Syntactic positions (as `PositionProvider`) of every node except whitespace/punctuation."""

    def _gen_impl(self, module: cst.Module) -> None:
        module._codegen(_State(module, self))
