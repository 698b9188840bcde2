"""Score mcjax-lint on one half of a sealed evaluation set (issue 19 item 5).

The evaluation set is split at random into an "open" half, which anyone may lint and study, and
a "sealed" half, whose findings nobody looks at until the analysis work is done: the gap between
the two halves' figures measures how much the rules were tuned to what was looked at. The split,
with a sha256 of the sealed half's files, is in benchmarks/<set>/split.json (and in
docs/benchmarks.md, "Sealed evaluation"). This script refuses the sealed half unless `--unseal`.

Twelve sets: `--set sealed` (the first one, the default; opened), `--set sealed2` (the second one;
opened), `--set sealed3` (the third, opened), `--set sealed4` (the fourth, opened), `--set sealed5`
(the fifth, opened), `--set sealed6` (the sixth, opened), `--set sealed7` (the seventh, opened),
`--set sealed8` (the eighth, opened), `--set sealed9` (the ninth, opened), `--set sealed10` (the tenth,
opened) and `--set sealed11` (the eleventh, opened; benchmarks/sealed11/README.md).

Programs (benchmarks/<set>/programs/<id>/): each hazard.py and correct.py is linted alone, as a
project of one file with the default configuration.
  - a hazard is found when hazard.py gets an error or warning finding on or within 3 lines of
    the documented hazard lines (meta.json / SOURCE.md);
  - a found hazard is also told apart when one of those findings is not in correct.py (the same
    code, severity and message, its numbers and file name aside): a finding the look-alike gets too says
    nothing about the difference between them;
  - a correct look-alike is flagged when correct.py gets any error finding.
Codebases (benchmarks/<set>/codebases.json): each is linted as its own project from a directory
prepared by benchmarks/<set>/prepare_codebases.py; the error-level findings are counted and
written to a file for review by hand (real / fragile / false positive).

    python benchmarks/sealed_eval.py --half open                          # programs only
    python benchmarks/sealed_eval.py --half open --codebases /tmp/sealed_cb -o /tmp/open_findings.json
    python benchmarks/sealed_eval.py --verify                             # the sealed half is unchanged
    python benchmarks/sealed_eval.py --half sealed --unseal ...           # only when the work is done
    python benchmarks/sealed_eval.py --set sealed2 --verify               # the second set; same options
    python benchmarks/sealed_eval.py --set sealed3 --verify               # the third set; same options
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = ("sealed", "sealed2", "sealed3", "sealed4", "sealed5", "sealed6", "sealed7", "sealed8", "sealed9",
        "sealed10", "sealed11", "sealed12", "sealed13", "sealed14", "sealed15", "sealed16", "sealed17", "sealed18", "sealed19", "sealed20",
        "sealed21", "sealed22", "sealed23", "sealed24")
SEALED = HERE / "sealed"
PROGRAMS = SEALED / "programs"
SPLIT = SEALED / "split.json"
NEAR = 3  # lines either side of the documented hazard lines
HAZARD_LINES_ARE_RANGE = True  # meta.json's hazard_lines: [first, last] (sets 1-2) or a list of lines (sets 3-6)
LINT_ENV: dict[str, str] | None = None  # set by --lint-at: run the linter of a committed state


def select_set(name: str) -> None:
    """Point SEALED, PROGRAMS and SPLIT at benchmarks/<name>/ (the first set unless called)."""
    global SEALED, PROGRAMS, SPLIT, HAZARD_LINES_ARE_RANGE
    if name not in SETS:
        raise ValueError(f"unknown evaluation set {name!r} (one of {', '.join(SETS)})")
    SEALED = HERE / name
    PROGRAMS = SEALED / "programs"
    SPLIT = SEALED / "split.json"
    HAZARD_LINES_ARE_RANGE = name in ("sealed", "sealed2")


def program_files(pid: str) -> list[Path]:
    return sorted(p for p in (PROGRAMS / pid).iterdir() if p.is_file())


def sealed_digest(split: dict) -> str:
    """sha256 over the sealed half: each program file's path and content hash, then each
    codebase's repository and commit, in sorted order."""
    h = hashlib.sha256()
    for pid in sorted(split["programs"]["sealed"]):
        for f in program_files(pid):
            rel = f.relative_to(SEALED).as_posix()
            h.update(f"{rel}\0{hashlib.sha256(f.read_bytes()).hexdigest()}\n".encode())
    sealed_repos = sorted(split.get("codebases", {}).get("sealed", []))
    commits = ({c["repo"]: c["commit"] for c in json.loads((SEALED / "codebases.json").read_text())["codebases"]}
               if sealed_repos else {})
    for repo in sealed_repos:
        h.update(f"codebase {repo} {commits[repo]}\n".encode())
    return h.hexdigest()


def lint_json(target: Path, cwd: Path, jobs: int | None = None) -> list[dict]:
    cmd = [sys.executable, "-m", "mcjax_lint", str(target), "--format", "json", "--no-cache", "--exit-zero"]
    if jobs:
        cmd += ["-j", str(jobs)]
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600, env=LINT_ENV)
    if out.returncode not in (0, 1, 2) or not out.stdout.strip():
        raise RuntimeError(f"mcjax-lint failed on {target}: {out.stderr.strip()[-400:]}")
    return json.loads(out.stdout)


def lint_alone(path: Path) -> list[dict]:
    """Lint one file as a project of its own (empty [tool.mcjax] configuration)."""
    with tempfile.TemporaryDirectory(prefix="sealed-eval-") as tmp:
        d = Path(tmp)
        shutil.copy2(path, d / path.name)
        (d / "pyproject.toml").write_text("[tool.mcjax]\n")
        return lint_json(Path(path.name), d)


def use_linter_at(commit: str, dest: Path) -> str:
    """Export mcjax_lint as of `commit` (this checkout's git) to dest and lint with it, so that
    figures belong to a commit and not to uncommitted work in the tree."""
    global LINT_ENV
    full = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", commit], capture_output=True, text=True,
                          check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", full, "mcjax_lint", "docs/rules"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    LINT_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")])))
    return full


def _finding(f: dict) -> tuple:
    """(code, severity, line, confidence): the confidence lets benchmarks/rule_precision.py count
    a certain finding of a medium-precision rule, shown as a warning, as the error it would be."""
    return (f["code"], f["severity"], f["line"], f.get("confidence"))


def _said(f: dict) -> tuple:
    """What a finding says, its numbers and the file's own name aside (lines shift between
    hazard.py and correct.py, and a message may quote `hazard.py:12`)."""
    return (f["code"], f["severity"], re.sub(r"\d+", "#", re.sub(r"\b(hazard|correct)\.py\b", "<file>", f.get("message", ""))))


def score_programs(ids: list[str]) -> dict:
    rows = []
    for pid in sorted(ids):
        meta = json.loads((PROGRAMS / pid / "meta.json").read_text())
        lines = meta["hazard_lines"]
        # The first two sets give the hazard as a range [first, last]; the third lists the lines
        # where the decision is made and the collective is skipped or mismatched.
        spans = [(lines[0], lines[1])] if HAZARD_LINES_ARE_RANGE else [(n, n) for n in lines]
        hz = lint_alone(PROGRAMS / pid / "hazard.py")
        ok = lint_alone(PROGRAMS / pid / "correct.py")
        near = [f for f in hz if f["severity"] in ("error", "warning")
                and any(f["line"] <= hi + NEAR and f.get("end_line", f["line"]) >= lo - NEAR for lo, hi in spans)]
        also = {_said(f) for f in ok}
        rows.append({"id": pid, "hazard_lines": lines,
                     "hazard_found": bool(near), "hazard_findings": [_finding(f) for f in hz],
                     "hazard_told_apart": any(_said(f) not in also for f in near),
                     "correct_flagged": any(f["severity"] == "error" for f in ok),
                     "correct_findings": [_finding(f) for f in ok]})
        r = rows[-1]
        seen = ("found" if r["hazard_told_apart"] else "found=") if r["hazard_found"] else "MISSED"
        print(f"{pid:<40} hazard {seen:<6} {r['hazard_findings']}  "
              f"correct {'FLAGGED' if r['correct_flagged'] else 'clean'} {r['correct_findings']}", flush=True)
    n = len(rows)
    found = sum(r["hazard_found"] for r in rows)
    apart = sum(r["hazard_told_apart"] for r in rows)
    flagged = sum(r["correct_flagged"] for r in rows)
    warned = sum(bool(r["correct_findings"]) for r in rows)
    print(f"programs: {n}; hazards found {found}/{n} ({100 * found / max(n, 1):.0f}%), told apart from the "
          f"look-alike {apart}/{n} ({100 * apart / max(n, 1):.0f}%; found= marks the others); correct flagged (error) "
          f"{flagged}/{n} ({100 * flagged / max(n, 1):.0f}%); correct with any finding {warned}/{n}")
    return {"rows": rows, "hazards_found": found, "hazards_told_apart": apart, "correct_flagged": flagged,
            "correct_any_finding": warned, "n": n}


def score_codebases(repos: list[str], prepared: Path, jobs: int | None) -> dict:
    manifest = {c["repo"]: c for c in json.loads((SEALED / "codebases.json").read_text())["codebases"]}
    result = {}
    for repo in sorted(repos):
        d = prepared / repo.replace("/", "+", 1)
        commit_file = d / ".commit"
        if not commit_file.exists() or commit_file.read_text().strip() != manifest[repo]["commit"]:
            raise SystemExit(f"sealed_eval: {d} is not {repo} at {manifest[repo]['commit'][:12]}: "
                             f"run benchmarks/{SEALED.name}/prepare_codebases.py")
        try:
            findings = lint_json(Path("."), d, jobs)
        except RuntimeError as e:  # the linter itself failed on this codebase: a result, not the end
            result[repo] = {"commit": manifest[repo]["commit"], "kloc": manifest[repo]["py_lines"] / 1000,
                            "errors": [], "warnings": 0, "linter_failed": str(e)[-300:]}
            print(f"{repo:<40} mcjax-lint FAILED: {str(e).splitlines()[-1][:160]}", flush=True)
            continue
        errors = [f for f in findings if f["severity"] == "error"]
        warnings = [f for f in findings if f["severity"] == "warning"]
        result[repo] = {"commit": manifest[repo]["commit"], "kloc": manifest[repo]["py_lines"] / 1000,
                        "errors": errors, "warnings": len(warnings)}
        print(f"{repo:<40} {manifest[repo]['py_lines'] / 1000:>7.1f} kLOC  errors {len(errors):>3}  warnings {len(warnings):>3}",
              flush=True)
        for f in errors:
            print(f"    {f['path']}:{f['line']} {f['code']} {f['message'][:160]}")
    total = sum(len(r["errors"]) for r in result.values())
    failed = sum("linter_failed" in r for r in result.values())
    print(f"codebases: {len(result)}; error-level findings {total} (review each: real / fragile / false positive)"
          + (f"; the linter failed on {failed}" if failed else ""))
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", dest="eval_set", choices=SETS, default="sealed",
                    help="which evaluation set: sealed (the first, default), sealed2, sealed3, sealed4, sealed5, sealed6, sealed7, sealed8, sealed9, sealed10, sealed11, sealed12, sealed13, sealed14, sealed15, sealed16, sealed17, sealed18, sealed19, sealed20, sealed21, sealed22, sealed23 or sealed24")
    ap.add_argument("--half", choices=("open", "sealed"))
    ap.add_argument("--unseal", action="store_true", help="allow --half sealed (only once the work is done)")
    ap.add_argument("--verify", action="store_true", help="check the sealed half's hash; lints nothing")
    ap.add_argument("--codebases", type=Path, help="directory prepared by benchmarks/<set>/prepare_codebases.py")
    ap.add_argument("--no-programs", action="store_true")
    ap.add_argument("-o", "--output", type=Path, help="write all findings here (JSON) for review")
    ap.add_argument("-j", "--jobs", type=int, help="mcjax-lint worker processes for codebases")
    ap.add_argument("--lint-at", metavar="COMMIT", help="lint with mcjax_lint as of this commit (default: the tree)")
    args = ap.parse_args()
    select_set(args.eval_set)
    if not SPLIT.exists():
        print(f"sealed_eval: {SPLIT.relative_to(HERE.parent)} is missing: the set {args.eval_set} is not split yet",
              file=sys.stderr)
        return 2
    split = json.loads(SPLIT.read_text())
    digest = sealed_digest(split)
    if digest != split["sealed_sha256"]:
        print(f"sealed_eval: the sealed half of {args.eval_set} changed since the split "
              f"(sha256 {digest} != {split['sealed_sha256']})", file=sys.stderr)
        return 2
    if args.verify:
        print(f"{args.eval_set}: sealed half unchanged: sha256 {digest}")
        return 0
    if args.half is None:
        ap.error("--half open|sealed (or --verify)")
    if args.half == "sealed" and not args.unseal:
        print("sealed_eval: refusing the sealed half without --unseal (look at its findings only when the "
              "analysis work is done)", file=sys.stderr)
        return 2
    report: dict = {"set": args.eval_set, "half": args.half, "sealed_sha256": digest}
    tmp = tempfile.TemporaryDirectory(prefix="sealed-lint-")
    if args.lint_at:
        report["linter_commit"] = use_linter_at(args.lint_at, Path(tmp.name))
        print(f"linter: mcjax_lint at {report['linter_commit'][:12]}")
    if not args.no_programs:
        # Pairs a check after the split found unfit to score (reason in split.json) count in neither half.
        excluded = split.get("excluded_after_split", {})
        report["excluded_after_split"] = sorted(p for p in split["programs"][args.half] if p in excluded)
        report["programs"] = score_programs([p for p in split["programs"][args.half] if p not in excluded])
    if args.codebases:
        report["codebases"] = score_codebases(split.get("codebases", {}).get(args.half, []), args.codebases, args.jobs)
    if args.output:
        args.output.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
