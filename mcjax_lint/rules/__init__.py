"""Rule registry: every rule's stable code, name, severity and one-line summary.

Each rule lives in its own module (`mcjax_lint/rules/mcjNNN_*.py`) as one small libcst visitor
whose class states its catalogue entry as literal attributes (`CODE`, `NAME`, `SEVERITY`,
`SUMMARY`, `FIXABLE`, `FAMILY`, `PRECISION`). `RULES`, the catalogue the tooling (select/ignore, docs, SARIF)
reads, is built from those literals without importing the modules — the configuration and a
cached run stay free of libcst — and `visitor_classes()` imports them for the analysis. Adding a
rule is adding its module (with its doc page and fixtures); nothing here changes.
"""

from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

from mcjax_lint.model import Severity

_HERE = Path(__file__).resolve().parent
_FIELDS = {"CODE": "code", "NAME": "name", "SEVERITY": "severity", "SUMMARY": "summary", "FIXABLE": "fixable",
           "FAMILY": "family", "PRECISION": "precision"}
# A rule's precision, as CodeQL gives each query one: "high" when its errors on code nobody tuned
# it on were right at least half the time, "medium" when they were wrong more often than right
# (benchmarks/rule_precision.py measures it). A medium-precision rule reports warnings unless the
# configuration sets its severity; its findings and their evidence are the same.
PRECISIONS = ("high", "medium")


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str  # kebab-case
    severity: Severity  # of a finding whose every step is certain; a guess makes it at most a warning
    summary: str  # one line
    fixable: bool
    family: str
    precision: str = "high"

    @property
    def level(self) -> Severity:
        """The severity of a finding whose every step is certain, when the configuration does not
        set one: the rule's own, at most a warning for a medium-precision rule."""
        if self.precision == "medium" and self.severity == Severity.ERROR:
            return Severity.WARNING
        return self.severity


def _rule_modules() -> list[Path]:
    return sorted(_HERE.glob("mcj[0-9][0-9][0-9]_*.py"))


def _entry(path: Path) -> RuleInfo:
    """The catalogue attributes of the rule class in `path`, read as literals."""
    tree = ast.parse(_class_heads(path.read_text(encoding="utf-8")), str(path))
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        vals: dict = {}
        for st in cls.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                    and st.targets[0].id in _FIELDS:
                vals[_FIELDS[st.targets[0].id]] = ast.literal_eval(st.value)
        if "code" in vals:
            vals.setdefault("fixable", False)
            vals["severity"] = Severity(vals.get("severity", "error"))
            if vals.setdefault("precision", "high") not in PRECISIONS:
                raise ImportError(f"{path.name}: PRECISION must be one of {PRECISIONS}")
            return RuleInfo(**vals)
    raise ImportError(f"{path.name}: no rule class with a literal CODE")


def _class_heads(text: str) -> str:
    """Each top-level class statement with its body up to its first method: the catalogue
    attributes, without parsing the rest of the module (this runs on every lint)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("class "):
            inside = True
        elif inside and (line.startswith(("    def ", "    @", "    async def ")) or (line and not line[0].isspace())):
            out.append("    pass")
            inside = line.startswith("class ")
        if inside:
            out.append(line)
    if inside:
        out.append("    pass")
    return "\n".join(out) + "\n"


def _catalogue() -> dict[str, RuleInfo]:
    return {info.code: info for info in map(_entry, _rule_modules())}


def visitor_classes() -> list[type]:
    """The rule visitors, one per code (imported lazily: they depend on the analysis)."""
    from mcjax_lint.rules.base import Rule

    out = []
    for path in _rule_modules():
        mod = importlib.import_module(f"{__name__}.{path.stem}")
        out += [c for c in vars(mod).values()
                if isinstance(c, type) and issubclass(c, Rule) and c.__module__ == mod.__name__ and c.CODE]
    return out


def __getattr__(name: str):
    if name == "RULES":
        rules = _catalogue()
        globals()["RULES"] = rules
        return rules
    raise AttributeError(name)
