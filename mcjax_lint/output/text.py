"""Default terminal output: `path:line:col: CODE [severity] message`, the source line with a
caret under the reported span, related locations and the available fix.

A `= chain:` line shows how the finding was reached, source to sink, each guess marked with why
(`docs/lint.md`, "Evidence"). Each finding ends with a `= help:` line naming its rule's page (a path that opens here, the
page SARIF carries as the rule's help), except with `--no-show-source` (one line per finding).
The text is built as (text, style) segments once: written plain when the output is not a
terminal (no rich import, which matters for pre-commit latency), rendered with rich styles when
it is. Columns shown here are 1-based, as editors and compilers print them.
"""

from __future__ import annotations

from mcjax_lint.model import Finding, Severity
from mcjax_lint.output.context import OutputContext
from mcjax_lint.output.rule_pages import page_link

Segment = tuple[str, str]  # (text, rich style)

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "bold cyan"}


def _expand(line: str) -> str:
    return line.rstrip("\r\n").replace("\t", " ")


def finding_segments(f: Finding, ctx: OutputContext) -> list[Segment]:
    seg: list[Segment] = [
        (f"{f.path}:{f.line}:{f.column + 1}:", "bold"),
        (" ", ""),
        (f.code, "bold red" if f.severity == Severity.ERROR else _SEVERITY_STYLE.get(f.severity, "")),
        (" ", ""),
        (f"[{f.severity.value}]", _SEVERITY_STYLE.get(f.severity, "")),
        (" ", ""),
        (f.message, ""),
        ("\n", ""),
    ]
    lines = ctx.read_lines(f.path) if ctx.show_source else None
    if lines is not None and 1 <= f.line <= len(lines):
        text = _expand(lines[f.line - 1])
        gutter = str(f.line)
        pad = " " * len(gutter)
        start = min(f.column, len(text))
        end = f.end_column if f.end_line == f.line else len(text)
        end = max(start + 1, min(end, len(text)) if end > start else start + 1)
        seg += [
            (f"{pad} |\n", "blue"),
            (f"{gutter} | ", "blue"),
            (text + "\n", ""),
            (f"{pad} | ", "blue"),
            (" " * start, ""),
            ("^" * (end - start) + "\n", "bold red"),
        ]
    for label, line, col in f.related:
        seg += [("  = ", "blue"), (f"{f.path}:{line}:{col + 1}: ", "bold"), (f"{label}\n", "")]
    if f.chain and ctx.show_source:
        seg += [("  = chain: ", "blue"), (chain_text(f) + "\n", "")]
        for other in f.also:  # (other findings of this rule at this position, merged)
            seg += [("  = also: ", "blue"), (chain_text(f, other) + "\n", "")]
    if f.fix is not None and ctx.fixable_hint:
        seg += [("  = fix: ", "blue"), (f"{f.fix.description} (apply with --fix)\n", "green")]
    if ctx.show_source:
        link = page_link(f.code)  # the page SARIF embeds as the rule's help
        if link is not None:
            seg += [("  = help: ", "blue"), (f"{link} (or `mcjax-lint rule {f.code}`)\n", "")]
        seg.append(("\n", ""))
    return seg


def chain_text(f: Finding, chain: tuple | None = None) -> str:
    """The finding's evidence (or another `chain` of it) on one line: each step (and its line),
    a guess marked `[guess]`."""
    parts = []
    for st in f.chain if chain is None else chain:
        at = f" (line {st.line})" if st.line else ""
        parts.append(f"{st.text}{at}" + ("" if st.certain else f" [guess: {st.why}]"))
    return " → ".join(parts)


def summary_segments(ctx: OutputContext) -> list[Segment]:
    n = len(ctx.findings)
    if n == 0:
        return [("All checks passed!\n", "bold green")] if not ctx.file_errors else []
    fixable = sum(1 for f in ctx.findings if f.fix is not None)
    word = "finding" if n == 1 else "findings"
    seg: list[Segment] = [(f"Found {n} {word}", "bold")]
    if fixable and ctx.fixable_hint:
        seg.append((f" ({fixable} fixable with `--fix`)", ""))
    seg.append((".\n", "bold"))
    return seg


def render_segments(ctx: OutputContext, summary: bool = True) -> list[Segment]:
    seg: list[Segment] = []
    for f in ctx.findings:
        seg += finding_segments(f, ctx)
    if summary:
        seg += summary_segments(ctx)
    return seg


def to_plain(segments: list[Segment]) -> str:
    return "".join(t for t, _ in segments)


def render(ctx: OutputContext, summary: bool = True) -> str:
    return to_plain(render_segments(ctx, summary))


def print_segments(segments: list[Segment], stream, color: bool) -> None:
    """Write segments to `stream`, with rich styles when `color` (a terminal)."""
    if not color:
        stream.write(to_plain(segments))
        return
    from rich.console import Console
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=True, force_terminal=True)
    text = Text()
    for t, style in segments:
        text.append(t, style=style or None)
    console.print(text, end="")
