"""`--format json`: a JSON list of findings, one object per finding.

Keys: path, line (1-based), column (0-based), end_line, end_column, code, severity, message,
fix (null or {description, edits: [{line, column, end_line, end_column, replacement}]}),
related ([{message, line, column}], same file), chain ([{line, text, certain, why}], source to
sink: line null when the step is in another file, why null unless it is a guess), also (the
chains of other findings of this rule at this position, merged into this one: [[step, ...]]), confidence
("certain" when every step is, else "guess"), and the rule's name.
"""

from __future__ import annotations

import json

from mcjax_lint.output.context import OutputContext


def render(ctx: OutputContext) -> str:
    out = []
    for f in ctx.findings:
        d = f.to_dict()
        info = ctx.rules.get(f.code)
        d["rule"] = getattr(info, "name", None)
        out.append(d)
    return json.dumps(out, indent=2) + "\n"
