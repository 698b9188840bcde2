"""`--format sarif`: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers.

Locations are relative to the project root (`%SRCROOT%`), regions 1-based in lines and columns
(SARIF's default column unit is the Unicode code point, which is what the findings count).
Every rule is described in `tool.driver.rules` with its summary, default level, help page and
the page's text as `help.markdown` (the pages in docs/rules/ ship in the package as
`mcjax_lint.rule_docs`), its default level and its `properties.precision` (the rule's measured
precision, as CodeQL's queries carry theirs). Each result carries its evidence: `rank` and
`properties.precision` (high when every step of its chain is certain and its rule's precision is
high, medium otherwise) and the chain itself as a `codeFlows` thread flow, source to sink.
"""

from __future__ import annotations

import json

from mcjax_lint import __version__
from mcjax_lint.model import CERTAIN, GUESS, Finding, Severity
from mcjax_lint.output.context import OutputContext
from mcjax_lint.output.rule_pages import docs_base, page_path

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# A finding whose every step is certain, and one reached through a guess (docs/lint.md, "Evidence"):
# SARIF's `rank` (0-100, how much a viewer should rank it up) and CodeQL's `precision` property.
# A certain chain of a medium-precision rule ranks between the two.
RANK = {CERTAIN: 90.0, GUESS: 50.0}
RANK_MEDIUM_RULE = 70.0
PRECISION = {CERTAIN: "high", GUESS: "medium"}


def _uri(ctx: OutputContext, path: str) -> tuple[str, str | None]:
    absolute = ctx.absolute(path)
    if ctx.project_root is not None:
        try:
            return absolute.relative_to(ctx.project_root).as_posix(), "%SRCROOT%"
        except ValueError:
            pass
    return absolute.as_uri(), None


def _artifact(ctx: OutputContext, path: str) -> dict:
    uri, base = _uri(ctx, path)
    return {"uri": uri, "uriBaseId": base} if base else {"uri": uri}


def _location(ctx: OutputContext, path: str, line: int, col: int, end_line: int | None = None,
              end_col: int | None = None, message: str | None = None) -> dict:
    artifact = _artifact(ctx, path)
    region: dict = {"startLine": max(line, 1), "startColumn": col + 1}
    if end_line is not None:
        region["endLine"] = max(end_line, line, 1)
        if end_col is not None and (end_line > line or end_col > col):
            region["endColumn"] = end_col + 1
    loc: dict = {"physicalLocation": {"artifactLocation": artifact, "region": region}}
    if message:
        loc["message"] = {"text": message}
    return loc


def _rule(code: str, info: object, base: str) -> dict:
    summary = getattr(info, "summary", "") or code
    sev = getattr(info, "level", Severity.ERROR)
    rule: dict = {
        "id": code,
        "name": _camel(getattr(info, "name", code)),
        "shortDescription": {"text": summary},
        "fullDescription": {"text": summary},
        "helpUri": f"{base}{code}.md",
        "defaultConfiguration": {"level": _LEVEL.get(Severity(sev), "error")},
        "properties": {"tags": [t for t in ("mcjax", getattr(info, "family", None)) if t],
                       "precision": getattr(info, "precision", "high")},
    }
    page = page_path(code)
    if page is not None:
        text = page.read_text(encoding="utf-8")
        rule["help"] = {"text": summary, "markdown": text}
    return rule


def _camel(name: str) -> str:
    # SARIF rule names are conventionally identifiers; ruff-style kebab names become CamelCase.
    parts = [p for p in name.replace("_", "-").split("-") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or name


def _code_flow(ctx: OutputContext, f: Finding, chain: tuple | None = None) -> dict:
    """The finding's chain (or another `chain` of it), source to sink, as one thread flow (a
    step in another file has no region: its message names where it is)."""
    locs = []
    chain = f.chain if chain is None else chain
    for st in chain:
        text = st.text if st.certain else f"{st.text} [guess: {st.why}]"
        if st.line:
            loc = _location(ctx, f.path, st.line, 0, message=text)
        else:
            loc = {"message": {"text": text}}
        locs.append({"location": loc, "importance": "essential" if st.certain else "important",
                     "properties": {"certain": st.certain}})
    sure = "certain" if all(st.certain for st in chain) else "guess"
    return {"message": {"text": f"how it was reached ({sure})"}, "threadFlows": [{"locations": locs}]}


def _fix(ctx: OutputContext, f: Finding) -> list[dict]:
    if f.fix is None:
        return []
    artifact = _artifact(ctx, f.path)
    replacements = [
        {
            "deletedRegion": {"startLine": e.line, "startColumn": e.column + 1, "endLine": e.end_line,
                              "endColumn": e.end_column + 1},
            "insertedContent": {"text": e.replacement},
        }
        for e in f.fix.edits
    ]
    return [{"description": {"text": f.fix.description},
             "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}]}]


def build(ctx: OutputContext) -> dict:
    base = docs_base()
    codes = sorted(set(ctx.rules) | {f.code for f in ctx.findings})
    index = {c: i for i, c in enumerate(codes)}
    results = []
    for f in ctx.findings:
        res: dict = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _LEVEL.get(f.severity, "error"),
            "message": {"text": f.message},
            "locations": [_location(ctx, f.path, f.line, f.column, f.end_line, f.end_column)],
        }
        if f.related:
            res["relatedLocations"] = [
                dict(_location(ctx, f.path, line, col, message=label), id=i)
                for i, (label, line, col) in enumerate(f.related)
            ]
        medium_rule = getattr(ctx.rules.get(f.code), "precision", "high") == "medium"
        res["rank"] = RANK_MEDIUM_RULE if medium_rule and f.confidence == CERTAIN else RANK[f.confidence]
        res["properties"] = {"precision": "medium" if medium_rule else PRECISION[f.confidence],
                             "confidence": f.confidence}
        if f.chain:
            res["codeFlows"] = [_code_flow(ctx, f)] + [_code_flow(ctx, f, c) for c in f.also]
        fixes = _fix(ctx, f)
        if fixes:
            res["fixes"] = fixes
        results.append(res)
    notifications = [
        {"level": "error", "message": {"text": e.message},
         "locations": [{"physicalLocation": {"artifactLocation": _artifact(ctx, e.path)}}]}
        for e in ctx.file_errors
    ]
    run: dict = {
        "tool": {
            "driver": {
                "name": "mcjax-lint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": base.rsplit("rules/", 1)[0] + "lint.md",
                "rules": [_rule(c, ctx.rules.get(c), base) for c in codes],
            }
        },
        "invocations": [{"executionSuccessful": not ctx.file_errors,
                         "toolExecutionNotifications": notifications}],
        "results": results,
        "columnKind": "unicodeCodePoints",
    }
    if ctx.project_root is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": ctx.project_root.as_uri() + "/"}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(ctx: OutputContext) -> str:
    return json.dumps(build(ctx), indent=2) + "\n"
