"""Base class of the rules: one small libcst visitor per rule over the shared analysis."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from mcjax_lint.analysis.divergence import Divergence, Tok
from mcjax_lint.analysis.taint import FileAnalysis
from mcjax_lint.analysis.values import Src, Val
from mcjax_lint.model import Finding, Fix


@dataclass
class RuleContext:
    path: str
    fa: FileAnalysis
    div: Divergence
    findings: list[Finding] = field(default_factory=list)
    _seen: set = field(default_factory=set)


class Rule(cst.BatchableCSTVisitor):
    """Subclasses set `CODE` and implement `visit_<Node>` methods that call `report`."""

    CODE = ""

    def __init__(self, ctx: RuleContext):
        super().__init__()
        self.ctx = ctx
        from mcjax_lint.rules import RULES

        self.info = RULES[self.CODE]

    # -------------------------------------------------------------- helpers
    def report(self, node: cst.CSTNode | Src, message: str, related=(), fix: Fix | None = None) -> None:
        """Every location must be in this file: a source the analysis could not place here (see
        `Src.located`) is never used as one — related locations without a line are left out."""
        if isinstance(node, Src):  # located (OriginRule.emit checks)
            line, col, end_line, end_col = node.line, node.column, node.end_line, node.end_column
        else:
            line, col, end_line, end_col = self.ctx.fa.pos(node)
        related = tuple(r for r in related if r[1] > 0)
        key = (self.CODE, line, col)
        if key in self.ctx._seen:
            return
        self.ctx._seen.add(key)
        self.ctx.findings.append(Finding(
            path=self.ctx.path, line=line, column=col, end_line=end_line, end_column=end_col, code=self.CODE,
            severity=self.info.severity, message=message, fix=fix, related=tuple(related)))

    def line(self, node: cst.CSTNode) -> int:
        return self.ctx.fa.line(node)

    def where(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.ctx.fa.pos(node)
        return r[0], r[1]

    def tok_text(self, tok: Tok) -> str:
        return f"{tok.desc} at line {self.line(tok.node)}"

    def related_tok(self, tok: Tok, label: str = "collective work") -> tuple[str, int, int]:
        ln, col = self.where(tok.node)
        return (f"{label}: {tok.desc}", ln, col)


def process_sources(v: Val) -> list[Src]:
    return sorted(v.pd) + sorted(v.pdc)


def describe_source(s: Src, at_line: int | None = None) -> str:
    text = s.describe()
    if s.located and s.line != at_line and not s.origin:
        text += f" (line {s.line})"
    return text


def related_source(s: Src, label: str = "source of divergence") -> tuple[str, int, int]:
    """A related location for a source; line 0 (left out by `report`) if it is not in this file."""
    return (f"{label}: {s.describe()}", s.line, s.column) if s.located else (f"{label}: {s.describe()}", 0, 0)


def visits(*node_types: str):
    """Class decorator: route `visit_<T>` for each node type to the class's `check` method.

    (libcst's batched visitors find methods by their `__name__`, so plain aliases do not work.)
    """

    def deco(cls):
        for t in node_types:
            def method(self, node, _t=t):
                self.check(node)

            method.__name__ = f"visit_{t}"
            method.__qualname__ = f"{cls.__name__}.visit_{t}"
            setattr(cls, f"visit_{t}", method)
        return cls

    return deco
