"""Where each rule's page is, for every place that points at it: `mcjax-lint rule CODE`, the
text output's `= help:` line and SARIF's `helpUri` / `help.markdown`.

The pages are docs/rules/CODE.md, shipped in the package as `mcjax_lint.rule_docs` (pyproject
maps the directory); an editable install or a source checkout reads them from docs/rules/.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from mcjax_lint.files import display_path

_PACKAGE = Path(__file__).resolve().parents[1]
DOCS_DIR = _PACKAGE / "rule_docs" if (_PACKAGE / "rule_docs").is_dir() else _PACKAGE.parent / "docs" / "rules"

# The project's repository ([project.urls] in pyproject.toml): the fallback for SARIF's links.
REPOSITORY_DOCS = "https://github.com/mcjax/mcjax/blob/main/docs/"


def page_path(code: str) -> Path | None:
    """The installed page of rule `code`, or None when there is none."""
    page = DOCS_DIR / f"{code}.md"
    return page if page.is_file() else None


def page_link(code: str) -> str | None:
    """What the text output prints for a rule's page: a path that opens on this machine
    (relative to the working directory when below it, as in a checkout of the repository)."""
    page = page_path(code)
    return display_path(page) if page is not None else None


def docs_base() -> str:
    """URL of the directory of rule pages: the documentation URL the installed metadata names,
    else the pages in the project's repository. SARIF viewers need a URL; they get the page's
    text too (`help.markdown`, read from `page_path`)."""
    try:
        from importlib.metadata import metadata

        for entry in metadata("mcjax").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("documentation", "docs", "rules"):
                return url.strip().rstrip("/") + "/rules/"
    except Exception:  # metadata missing (running from a plain checkout)
        pass
    return REPOSITORY_DOCS + "rules/"


def rule_command(argv: list[str], rules: Mapping[str, object]) -> int:
    """`mcjax-lint rule CODE`: print the rule's page (Markdown); without a code, list the rules.
    An unknown code is one line on stderr and exit status 2."""
    parser = argparse.ArgumentParser(prog="mcjax-lint rule", description="Print a rule's page, or list the rules.")
    parser.add_argument("code", nargs="?", help="a rule code, e.g. MCJ101 (default: list every rule)")
    args = parser.parse_args(argv)
    if args.code is None:
        for code, info in sorted(rules.items()):
            print(f"{code}  {getattr(info, 'name', '')}: {getattr(info, 'summary', '')}")
        return 0
    code = args.code.strip().upper()
    page = page_path(code) if code in rules else None
    if page is None:
        why = "no page for rule" if code in rules else "unknown rule code"
        print(f"mcjax-lint: error: {why} {args.code!r} (known: {', '.join(sorted(rules))})", file=sys.stderr)
        return 2
    sys.stdout.write(page.read_text(encoding="utf-8"))
    return 0
