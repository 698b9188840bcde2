"""Split an evaluation set in two halves at random and record the split (done once per set).

Shared by the sets' entry points (benchmarks/sealed/make_split.py, benchmarks/sealed2/make_split.py
and benchmarks/sealed2/split_codebases.py, whose docstrings give the commands and each set's method).
The items (program ids, codebase repos) are sorted, shuffled with random.Random(seed) and cut in
half: the first half is "open", the rest "sealed". Rerunning with the recorded seed (and the same
items) reproduces a split; `--out` writes it elsewhere, e.g. to compare it with the recorded one.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import sealed_eval  # benchmarks/ is on sys.path: the entry points put it there


def halves(items: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    items = sorted(items)
    rng.shuffle(items)
    k = len(items) // 2
    return sorted(items[:k]), sorted(items[k:])


def _args(doc: str, default_out: Path) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", type=Path, default=default_out,
                    help=f"write the split here instead of {default_out.name} (e.g. to check it reproduces)")
    return ap.parse_args()


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1) + "\n")


def make_split(doc: str, set_dir: Path, *, with_codebases: bool) -> int:
    """Split the programs of set_dir into split.json with the sha256 of the sealed half's files.

    with_codebases (the first set): one random.Random(seed) shuffles the program ids, then the
    repos of codebases.json. Otherwise (the second set on): only confirmed programs
    (confirmations.json; with an odd number, the sealed half has one more: sets 3-8 dropped one
    instead); the codebases' halves are copied from codebases_split.json (made by split_codebases)
    so that one sha256 covers both sealed parts."""
    sealed_eval.select_set(set_dir.name)
    args = _args(doc, sealed_eval.SPLIT)
    programs = [p.name for p in (set_dir / "programs").iterdir() if p.is_dir()]
    if with_codebases:
        rng = random.Random(args.seed)
        repos = [c["repo"] for c in json.loads((set_dir / "codebases.json").read_text())["codebases"]]
        p_open, p_sealed = halves(programs, rng)
        c_open, c_sealed = halves(repos, rng)
        split = {"seed": args.seed, "method": "random.Random(seed): shuffle sorted program ids, first half open; "
                                              "then shuffle sorted codebase repos, first half open",
                 "programs": {"open": p_open, "sealed": p_sealed},
                 "codebases": {"open": c_open, "sealed": c_sealed}}
    else:
        confirmed = json.loads((set_dir / "confirmations.json").read_text())["outcomes"]
        missing = sorted(p for p in programs if not confirmed.get(p, {}).get("confirmed"))
        if missing:
            raise SystemExit(f"make_split: not confirmed (drop them or confirm them first): {', '.join(missing)}")
        p_open, p_sealed = halves(programs, random.Random(args.seed))
        split = {"seed": args.seed,
                 "method": "random.Random(seed): shuffle the sorted program ids, first half open"
                           + (" (n // 2; the sealed half takes the odd one)" if len(programs) % 2 else ""),
                 "programs": {"open": p_open, "sealed": p_sealed},
                 "codebases": {"open": [], "sealed": []}}
        cb_split = set_dir / "codebases_split.json"
        if cb_split.exists():
            cb = json.loads(cb_split.read_text())
            split["codebases"] = {"open": cb["codebases"]["open"], "sealed": cb["codebases"]["sealed"]}
            split["codebases_split"] = {"from": cb_split.name, "seed": cb["seed"], "method": cb["method"]}
    split["sealed_files"] = [f.relative_to(set_dir).as_posix() for pid in p_sealed for f in sealed_eval.program_files(pid)]
    split["sealed_sha256"] = sealed_eval.sealed_digest(split)
    _write(args.out, split)
    print(f"open: {len(p_open)} programs, {len(split['codebases']['open'])} codebases; sealed: {len(p_sealed)} "
          f"programs, {len(split['codebases']['sealed'])} codebases; sealed sha256 {split['sealed_sha256']}")
    return 0


def split_codebases(doc: str, set_dir: Path) -> int:
    """Split only the repos of set_dir/codebases.json into codebases_split.json, with each pin."""
    args = _args(doc, set_dir / "codebases_split.json")
    pins = {c["repo"]: c["commit"] for c in json.loads((set_dir / "codebases.json").read_text())["codebases"]}
    c_open, c_sealed = halves(list(pins), random.Random(args.seed))
    split = {"seed": args.seed,
             "method": "random.Random(seed).shuffle of the sorted repos of codebases.json; first half open",
             "codebases": {"open": c_open, "sealed": c_sealed},
             "commits": dict(sorted(pins.items()))}
    _write(args.out, split)
    print(f"open: {', '.join(c_open)}\nsealed: {', '.join(c_sealed)}")
    return 0
