"""libcst parsing with a clear error for sources that do not parse."""

from __future__ import annotations

import libcst as cst

from mcjax_lint.errors import AnalysisError


def parse_module(source: str, path: str) -> cst.Module:
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as e:
        raise AnalysisError(path, f"syntax error: {e.message}", e.raw_line, e.raw_column) from None
    except cst.CSTValidationError as e:  # a token libcst's grammar reads but its nodes refuse
        raise AnalysisError(path, f"syntax error: {e}") from None
    except (RecursionError, MemoryError, ValueError) as e:
        raise AnalysisError(path, f"cannot parse: {type(e).__name__}: {e}") from None
