"""A leaner libcst position provider: the same ranges as `PositionProvider`, for fewer nodes.

libcst's `PositionProvider` records a `CodeRange` for every node (whitespace, commas, operators
included) and splits every token with a regex; on real code that costs ~7x the code generation
it rides on. The analysis asks for the positions of a few nodes per file (sources, findings,
fixes): one code generation notes the token span of every expression, statement and clause
(whitespace/punctuation skipped), and a span becomes (line, column) only when asked for. For the
nodes it records, the ranges equal `PositionProvider`'s.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

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
        self.start = len(self.state.tokens)

    def __exit__(self, *exc):
        spans = self.state.spans
        s = self.start
        if self.start_node is not None and id(self.start_node) in spans:
            s = spans[id(self.start_node)][0]
        e = len(self.state.tokens)
        if self.end_node is not None and id(self.end_node) in spans:
            e = spans[id(self.end_node)][1]
        spans[id(self.node)] = (s, e, self.node)
        return False


class _State(CodegenState):
    """Code generation that notes, per node, the token indices it starts and ends at: nothing per
    token (no line/column bookkeeping), and (line, column) only for the nodes asked about. Spans
    are keyed by `id(node)` (libcst's `CSTNode.__hash__` is a Python function: a third of the
    bookkeeping's cost) and hold the node itself, so no id is reused while they exist."""

    __slots__ = ("spans", "_stack")

    def __init__(self, module: cst.Module):
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.spans: dict = {}
        self._stack: list = []

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._stack.append(None if type(node) in _SKIP else len(self.tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self._stack.pop()
        if start is not None and id(node) not in self.spans:
            self.spans[id(node)] = (start, len(self.tokens), node)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)

    def pop_trailing_newline(self) -> None:
        pass  # spans may end after it (as PositionProvider counts it); the text is not output


_NEWLINE = re.compile(r"\r\n|\r|\n")


class Positions:
    """Node -> `Range`, computed when asked (the analysis asks about a few nodes per file). The
    code generation that finds the spans runs at the first question: a file whose analysis asks
    none (nothing process-dependent in it) never pays for it."""

    __slots__ = ("_module", "_spans_", "_tokens", "_offsets", "_line_starts")

    def __init__(self, module: cst.Module):
        self._module = module
        self._spans_: dict | None = None
        self._tokens: list[str] = []
        self._offsets: list[int] | None = None
        self._line_starts: list[int] | None = None

    @property
    def _spans(self) -> dict:
        if self._spans_ is None:
            state = _State(self._module)
            self._module._codegen(state)
            self._spans_, self._tokens = state.spans, state.tokens
        return self._spans_

    def ready(self) -> Positions:
        """Compute now what the first question would (the code generation, the line starts):
        done ahead, beside the index (`runner._parse_ahead`), on a core the index leaves idle.
        The answers are the same whenever they are computed: the tree does not change."""
        self._spans
        self._lines()
        return self

    def _lines(self) -> None:
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self._tokens), initial=0))
            text = "".join(self._tokens)
            self._line_starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def _at(self, token_index: int) -> tuple[int, int]:
        if self._offsets is None:
            self._lines()
        off = self._offsets[min(token_index, len(self._offsets) - 1)]
        line = bisect_right(self._line_starts, off)
        return line, off - self._line_starts[line - 1]

    def get(self, node: cst.CSTNode, default=None) -> Range | None:
        span = self._spans.get(id(node))
        if span is None:
            return default
        return Range(self._at(span[0]) + self._at(span[1]))

    def __getitem__(self, node: cst.CSTNode) -> Range:
        r = self.get(node)
        if r is None:
            raise KeyError(node)
        return r

    def __contains__(self, node: object) -> bool:
        return id(node) in self._spans

    def __len__(self) -> int:
        return len(self._spans)


def lean_positions(module: cst.Module) -> Positions:
    """Syntactic positions (as `PositionProvider`) of every node except whitespace/punctuation."""
    return Positions(module)


class LeanPositionProvider(BaseMetadataProvider[Range]):
    """`lean_positions` as a libcst metadata provider (resolving it copies every entry: the
    engine calls `lean_positions` directly)."""

    def _gen_impl(self, module: cst.Module) -> None:
        pos = lean_positions(module)
        for _, _, node in pos._spans.values():
            self.set_metadata(node, pos[node])
