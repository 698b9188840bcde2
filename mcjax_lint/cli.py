"""`mcjax-lint` command line (placeholder until the analyzer lands)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    raise SystemExit("mcjax-lint: not implemented yet")
