"""`mcjax-guard` command line (placeholder until the guard lands)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    raise SystemExit("mcjax-guard: not implemented yet")
