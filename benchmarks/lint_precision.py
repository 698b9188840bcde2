"""Lint precision on real JAX code: run the engine over the corpus and list every finding.

Each package under the corpus (see benchmarks/fetch_corpus.py) is linted as one project with the
serial reference pipeline (summaries -> index -> prefilter -> libcst analysis). Prints findings
per kLOC by code and a listing to review by hand; `benchmarks/lint_precision_review.json` holds the
by-hand verdicts (real hazard / fragile / false positive, with a one-line reason), so the script
can print the precision of the reviewed findings and point at findings nobody has judged yet.

    python benchmarks/fetch_corpus.py
    python benchmarks/lint_precision.py                 # summary + listing of error-level findings
    python benchmarks/lint_precision.py --all           # also warnings
    python benchmarks/lint_precision.py --package flax  # one package
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mcjax_lint import engine  # noqa: E402
from mcjax_lint.config import LintConfig, RuleFilter  # noqa: E402
from mcjax_lint.model import Severity  # noqa: E402
from mcjax_lint.modnames import module_names  # noqa: E402

REVIEW = HERE / "lint_precision_review.json"


def lint_package(root: Path) -> dict:
    paths = sorted(str(p) for p in root.rglob("*.py"))
    sources: dict[str, str] = {}
    loc = 0
    for p in paths:
        try:
            text = Path(p).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        sources[p] = text
        loc += text.count("\n")
    names = module_names(sources)
    t0 = time.perf_counter()
    summaries, errors = {}, []
    for p, text in sources.items():
        try:
            summaries[p] = engine.summarize(text, p, names[p])
        except engine.AnalysisError as e:
            errors.append(str(e))
    t1 = time.perf_counter()
    index = engine.build_index(summaries.values())
    t2 = time.perf_counter()
    todo = [p for p, s in summaries.items() if engine.needs_full_analysis(s, index)]
    t3 = time.perf_counter()
    findings = []
    shown = RuleFilter(LintConfig())
    analyzed_loc = 0
    for p in todo:
        analyzed_loc += sources[p].count("\n")
        try:
            # Shown as the command line shows them (rule precision, guesses never errors).
            findings.extend(replace(f, severity=shown.shown_severity(f))
                            for f in engine.analyze(sources[p], p, names[p], index))
        except engine.AnalysisError as e:
            errors.append(str(e))
    t4 = time.perf_counter()
    return {
        "files": len(sources), "loc": loc, "analyzed_files": len(todo), "analyzed_loc": analyzed_loc,
        "findings": findings, "errors": errors,
        "times": {"summarize": t1 - t0, "index": t2 - t1, "prefilter": t3 - t2, "analyze": t4 - t3},
    }


def key(package: str, root: Path, f) -> str:
    return f"{package}:{Path(f.path).relative_to(root)}:{f.line}:{f.code}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus")
    ap.add_argument("--package", action="append", help="only these packages")
    ap.add_argument("--all", action="store_true", help="list warnings too")
    ap.add_argument("--json", type=Path, help="write all findings as JSON")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: run benchmarks/fetch_corpus.py first", file=sys.stderr)
        return 2
    review = json.loads(REVIEW.read_text()) if REVIEW.exists() else {}
    packages = sorted(p for p in args.corpus.iterdir() if p.is_dir() and (not args.package or p.name in args.package))
    total_loc = 0
    by_code: Counter = Counter()
    errors_total = 0
    listing = []
    dump = []
    print(f"{'package':<18} {'version':<8} {'files':>6} {'kLOC':>7} {'analyzed':>9} {'errors':>7} {'warn':>5} "
          f"{'err/kLOC':>9} {'sum s':>6} {'idx s':>6} {'cst s':>6}")
    for pkg in packages:
        version = (pkg / ".version").read_text().strip() if (pkg / ".version").exists() else "?"
        r = lint_package(pkg)
        total_loc += r["loc"]
        errs = [f for f in r["findings"] if f.severity == Severity.ERROR]
        warns = [f for f in r["findings"] if f.severity != Severity.ERROR]
        errors_total += len(errs)
        for f in r["findings"]:
            by_code[f.code] += 1
            k = key(pkg.name, pkg, f)
            dump.append({"key": k, **f.to_dict()})
            if f.severity == Severity.ERROR or args.all:
                listing.append((k, f, review.get(k)))
        t = r["times"]
        print(f"{pkg.name:<18} {version:<8} {r['files']:>6} {r['loc'] / 1000:>7.1f} {r['analyzed_files']:>9} "
              f"{len(errs):>7} {len(warns):>5} {len(errs) / (r['loc'] / 1000):>9.3f} {t['summarize']:>6.1f} "
              f"{t['index']:>6.1f} {t['analyze']:>6.1f}")
        for e in r["errors"]:
            print(f"    file error: {e}")
    print(f"{'total':<18} {'':<8} {'':>6} {total_loc / 1000:>7.1f} {'':>9} {errors_total:>7} {'':>5} "
          f"{errors_total / (total_loc / 1000):>9.3f}")
    print("findings by code: " + ", ".join(f"{c}={n}" for c, n in sorted(by_code.items())))
    print("\nfindings (verdict from lint_precision_review.json):")
    for k, f, v in listing:
        verdict = v["verdict"] if v else "UNREVIEWED"
        print(f"  [{verdict}] {k}\n      {f.message}")
        if v:
            print(f"      -> {v['reason']}")
    print()
    for label, subset in (("error-level", [x for x in listing if x[1].severity == Severity.ERROR]),
                          ("all listed", listing)):
        counts = Counter(v["verdict"] if v else "UNREVIEWED" for _, _, v in subset)
        judged = sum(n for v, n in counts.items() if v != "UNREVIEWED")
        good = counts["real"] + counts["fragile"]
        if judged:
            print(f"{label}: reviewed {judged}/{len(subset)}: real {counts['real']}, fragile {counts['fragile']}, "
                  f"false positive {counts['false-positive']}; precision {100 * good / judged:.0f}%")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
