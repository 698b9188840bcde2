"""Base class of the rules: one small libcst visitor per rule over the shared analysis.

A rule module decides what it reports: its catalogue entry (class attributes `CODE`, `NAME`,
`SEVERITY`, `SUMMARY`, `FIXABLE`, `FAMILY`, literals read without importing the module, see
`rules/__init__.py`), which of the engine's facts it turns into findings, the chain of evidence
each finding carries, how that chain grades it (`grade`) and its message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from mcjax_lint.analysis import evidence
from mcjax_lint.analysis.divergence import Divergence, Tok
from mcjax_lint.analysis.taint import FileAnalysis, Sink
from mcjax_lint.analysis.values import Src, Val
from mcjax_lint.model import Finding, Fix, Severity, Step


@dataclass
class RuleContext:
    path: str
    fa: FileAnalysis
    div: Divergence
    findings: list[Finding] = field(default_factory=list)
    _seen: set = field(default_factory=set)
    # A step every finding of the file ends with: the program runs as several processes, where
    # that is a guess (`evidence.MODE_NOT_SELECTED`); None where it is not.
    program_step: Step | None = None


class Rule(cst.BatchableCSTVisitor):
    """Subclasses set the catalogue attributes and implement `visit_<Node>` methods that call
    `report` with the finding's chain."""

    CODE = ""
    NAME = ""  # kebab-case
    SEVERITY = "error"  # of a finding whose every step is certain
    SUMMARY = ""  # one line
    FIXABLE = False
    FAMILY = ""

    def __init__(self, ctx: RuleContext):
        super().__init__()
        self.ctx = ctx

    # ---------------------------------------------------------- what it asks
    def reports_sink(self, sink: Sink) -> bool:
        """Whether this rule reports `sink` (a value used where it must agree: its `place`, the
        `facet` of the value that got there and `sink.src.kind`, see analysis/kinds.py)."""
        return False

    def sinks(self, node: cst.CSTNode) -> list[Sink]:
        """The sinks at `node` this rule reports, in the order the engine found them, those from a
        source reached without a guess first (one finding per place names the most certain)."""
        return sorted((k for k in self.ctx.div.sinks_at.get(node, ()) if self.reports_sink(k)), key=lambda k: bool(k.src.guess))

    # ------------------------------------------------------------- evidence
    def grade(self, chain: tuple[Step, ...]) -> Severity:
        """The finding's severity: the rule's own when every step is certain, otherwise at most
        a warning (a rule with other evidence standards overrides this)."""
        sev = Severity(self.SEVERITY)
        if sev == Severity.ERROR and not all(s.certain for s in chain):
            return Severity.WARNING
        return sev

    def possible(self, message: str, chain: tuple[Step, ...]) -> str:
        """The message of a finding reached through a guess says so, and names the first one."""
        g = next((s for s in chain if not s.certain), None)
        if g is None:
            return message
        at = f" (line {g.line})" if g.line else ""
        what = "" if g.text.split(": ", 1)[-1] in message else f": {g.text}{at}"
        return f"{message} [possible: {g.why}{what}]"

    def source_steps(self, s: Src) -> list[Step]:
        """The source and the guesses that carried it here."""
        steps = [Step(s.line if s.located else 0, s.describe())]
        steps += [Step(line, text, False, why) for line, text, why in s.guess]
        return steps

    def step(self, node: cst.CSTNode, text: str) -> Step:
        """A certain step at `node` (a decision, an assignment the engine followed)."""
        return Step(self.line(node), text)

    def work_step(self, node: cst.CSTNode, desc: str, label: str = "collective work") -> Step:
        """The sink: collective work, certain unless the engine guessed it."""
        why = evidence.collective_guess(desc)
        return Step(self.line(node), f"{label}: {desc}", why is None, why or "")

    def tok_step(self, tok: Tok, label: str = "collective work") -> Step:
        return self.work_step(tok.node, tok.desc, label)

    # -------------------------------------------------------------- helpers
    def report(self, node: cst.CSTNode | Src, message: str, related=(), fix: Fix | None = None,
               chain: tuple[Step, ...] | list[Step] = (), per_sink: int | None = None) -> None:
        """Every location must be in this file: a source the analysis could not place here (see
        `Src.located`) is never used as one — related locations without a line are left out.
        The severity and the wording of a guess come from the chain (`grade`, `possible`)."""
        if isinstance(node, Src):  # located (OriginRule.emit checks)
            line, col, end_line, end_col = node.line, node.column, node.end_line, node.end_column
        else:
            line, col, end_line, end_col = self.ctx.fa.pos(node)
        related = tuple(r for r in related if r[1] > 0)
        # One finding per place and rule — per place, rule and sink line where a rule reports each
        # path from one origin to its sinks (`per_sink`: the sink's line).
        key = (self.CODE, line, col, per_sink)
        if key in self.ctx._seen:
            return
        self.ctx._seen.add(key)
        chain = tuple(chain)
        if self.ctx.program_step is not None:
            chain += (self.ctx.program_step,)
        self.ctx.findings.append(Finding(
            path=self.ctx.path, line=line, column=col, end_line=end_line, end_column=end_col, code=self.CODE,
            severity=self.grade(chain), message=self.possible(message, chain), fix=fix, related=tuple(related),
            chain=chain))

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
    """The value's process-dependent sources; a finding names (and grades) the first: a source
    reached without a guess before one reached by a guess."""
    return sorted(sorted(v.pd) + sorted(v.pdc), key=lambda s: bool(s.guess))


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
