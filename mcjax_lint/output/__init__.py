"""Output formats: terminal text (default), JSON, SARIF 2.1.0, GitHub workflow annotations.

Each format is a function `render(result, ctx) -> str` over the final findings (already filtered
by selection and suppressions). File errors go to stderr in every format except SARIF, which
carries them as tool execution notifications as well.
"""

from __future__ import annotations

from collections.abc import Callable

from mcjax_lint.output.context import OutputContext

FORMATS = ("text", "json", "sarif", "github")


def get_renderer(name: str) -> Callable[..., str]:
    if name == "text":
        from mcjax_lint.output.text import render
    elif name == "json":
        from mcjax_lint.output.json_format import render
    elif name == "sarif":
        from mcjax_lint.output.sarif import render
    elif name == "github":
        from mcjax_lint.output.github import render
    else:
        raise ValueError(f"unknown output format {name!r}")
    return render


__all__ = ["FORMATS", "OutputContext", "get_renderer"]
