"""`--statistics`: how many findings per rule code, most frequent first (as ruff prints it)."""

from __future__ import annotations

import json
from collections import Counter

from mcjax_lint.output.context import OutputContext


def counts(ctx: OutputContext) -> list[dict]:
    by_code = Counter(f.code for f in ctx.findings)
    fixable = Counter(f.code for f in ctx.findings if f.fix is not None)
    rows = []
    for code, n in sorted(by_code.items(), key=lambda kv: (-kv[1], kv[0])):
        info = ctx.rules.get(code)
        sev = next(f.severity.value for f in ctx.findings if f.code == code)
        rows.append({"code": code, "name": getattr(info, "name", ""), "count": n, "severity": sev,
                     "fixable": fixable[code]})
    return rows


def render(ctx: OutputContext, fmt: str = "text") -> str:
    rows = counts(ctx)
    if fmt == "json":
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    width = max(len(str(r["count"])) for r in rows)
    lines = []
    for r in rows:
        fix = " [*]" if r["fixable"] else ""
        lines.append(f"{r['count']:>{width}}\t{r['code']}\t[{r['severity']}]\t{r['name']}{fix}")
    return "\n".join(lines) + "\n"
