"""Each rule's precision on code nobody tuned the linter on, and whether its declaration agrees.

    python benchmarks/rule_precision.py            # the table
    python benchmarks/rule_precision.py --check    # exit 1 where a rule's PRECISION disagrees

The evidence is the sealed halves of the opened evaluation sets (`benchmarks/sealed*/
result_sealed.json`): each was linted once, at the end of its round, before anyone working on the
analysis had seen it. Per rule, an error-level finding counts as
  - right: an error in a hazard program within its documented hazard lines (as sealed_eval.py
    scores "found"), or a codebase error its reviewers judged real or fragile (in programs, a
    certain finding of a medium-precision rule counts as the error it would be; in codebases
    only error-level findings are reviewed, so a medium rule is measured there on the sets
    linted before it became medium);
  - wrong: an error in a correct look-alike, or a codebase error judged a false positive.
(An error in a hazard program away from its hazard lines, and a disputed codebase error, count
neither way.) A rule whose errors were wrong more often than right, over at least MIN_ERRORS of
them, has precision "medium" and reports warnings by default (mcjax_lint/rules/__init__.py);
every other rule "high". This is CodeQL's practice of giving each query a measured precision.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mcjax_lint.rules import RULES  # noqa: E402

NEAR = 3  # as sealed_eval.py
RANGE_SETS = ("sealed", "sealed2")  # their hazard_lines are [first, last]
MIN_ERRORS = 5


def result_files(root: Path = HERE) -> list[Path]:
    return sorted(root.glob("sealed*/result_sealed.json"))


def _near(line: int, hazard_lines: list[int], as_range: bool) -> bool:
    spans = [(hazard_lines[0], hazard_lines[1])] if as_range else [(n, n) for n in hazard_lines]
    return any(lo - NEAR <= line <= hi + NEAR for lo, hi in spans)


def _errors(findings: list) -> list[tuple[str, int]]:
    """(code, line) of the findings that count as the rule's errors: error-level ones, and the
    certain ones of a rule that shows them as warnings for its medium precision (recorded with
    their confidence since set 16), so that a medium rule keeps being measured."""
    out = []
    for code, sev, line, *rest in findings:
        info = RULES.get(code)
        demoted = info is not None and info.level != info.severity and rest and rest[0] == "certain"
        if sev == "error" or demoted:
            out.append((code, line))
    return out


def tally(files: list[Path]) -> dict[str, Counter]:
    """code -> Counter(right=, wrong=, elsewhere=, sets=)."""
    out: dict[str, Counter] = {}
    for path in files:
        data = json.loads(path.read_text())
        as_range = path.parent.name in RANGE_SETS
        for row in data.get("programs", {}).get("rows", []):
            for code, line in _errors(row.get("hazard_findings", [])):
                c = out.setdefault(code, Counter())
                c["right" if _near(line, row["hazard_lines"], as_range) else "elsewhere"] += 1
            for code, _line in _errors(row.get("correct_findings", [])):
                out.setdefault(code, Counter())["wrong"] += 1
        for cb in data.get("codebases", {}).values():
            for e in cb.get("errors", []):
                verdict = (e.get("review") or {}).get("verdict") or ""
                c = out.setdefault(e["code"], Counter())
                if verdict in ("real", "fragile"):
                    c["right"] += 1
                elif verdict.startswith("false"):
                    c["wrong"] += 1
    return out


def measured_precision(c: Counter) -> str:
    n = c["right"] + c["wrong"]
    return "medium" if n >= MIN_ERRORS and c["wrong"] > c["right"] else "high"


def disagreements(files: list[Path] | None = None) -> list[str]:
    """Rules whose declared PRECISION is not what the sealed halves measure."""
    counts = tally(result_files() if files is None else files)
    out = []
    for code, info in sorted(RULES.items()):
        want = measured_precision(counts.get(code, Counter()))
        if info.severity == "error" and info.precision != want:
            c = counts.get(code, Counter())
            out.append(f"{code}: declared {info.precision}, measured {want} ({c['right']} right, {c['wrong']} wrong)")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 where a declaration disagrees")
    args = ap.parse_args()
    files = result_files()
    counts = tally(files)
    print(f"{len(files)} sealed halves: {', '.join(p.parent.name for p in files)}")
    print(f"{'rule':<8} {'right':>5} {'wrong':>5} {'right %':>7} {'elsewhere':>9}  measured  declared  default level")
    for code, info in sorted(RULES.items()):
        c = counts.get(code, Counter())
        n = c["right"] + c["wrong"]
        pct = f"{100 * c['right'] / n:.0f}%" if n else "-"
        print(f"{code:<8} {c['right']:>5} {c['wrong']:>5} {pct:>7} {c['elsewhere']:>9}  "
              f"{measured_precision(c):<8}  {info.precision:<8}  {info.level.value}")
    bad = disagreements(files)
    for line in bad:
        print("disagrees:", line)
    return 1 if (args.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
