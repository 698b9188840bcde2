"""Split the second sealed evaluation's programs in two halves at random and record the split.

Programs (benchmarks/sealed2/programs/*, only those confirmed in confirmations.json) are shuffled
with random.Random(seed) and cut in half: the first half is "open", the rest "sealed". The codebase
part of the set (codebases.json) is split separately by split_codebases.py into
codebases_split.json; its two halves are copied here so that one sha256 covers both sealed parts.
Writes benchmarks/sealed2/split.json with the seed, both halves, every sealed file's path and the
sha256 that `benchmarks/sealed_eval.py --set sealed2` checks. Rerunning with the recorded seed (and
the same programs) reproduces it.

    python benchmarks/sealed2/make_split.py --seed N
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import sealed_eval  # noqa: E402

sealed_eval.select_set("sealed2")


def halves(items: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    items = sorted(items)
    rng.shuffle(items)
    k = len(items) // 2
    return sorted(items[:k]), sorted(items[k:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    confirmed = json.loads((HERE / "confirmations.json").read_text())["outcomes"]
    programs = [p.name for p in (HERE / "programs").iterdir() if p.is_dir()]
    missing = sorted(p for p in programs if not confirmed.get(p, {}).get("confirmed"))
    if missing:
        raise SystemExit(f"make_split: not confirmed (drop them or confirm them first): {', '.join(missing)}")
    if len(programs) % 2:
        raise SystemExit(f"make_split: {len(programs)} programs cannot make two equal halves")
    p_open, p_sealed = halves(programs, random.Random(args.seed))
    split = {"seed": args.seed,
             "method": "random.Random(seed): shuffle the sorted program ids, first half open",
             "programs": {"open": p_open, "sealed": p_sealed},
             "codebases": {"open": [], "sealed": []}}
    cb_split = HERE / "codebases_split.json"
    if cb_split.exists():
        cb = json.loads(cb_split.read_text())
        split["codebases"] = {"open": cb["codebases"]["open"], "sealed": cb["codebases"]["sealed"]}
        split["codebases_split"] = {"from": cb_split.name, "seed": cb["seed"], "method": cb["method"]}
    split["sealed_files"] = [f.relative_to(HERE).as_posix() for pid in p_sealed for f in sealed_eval.program_files(pid)]
    split["sealed_sha256"] = sealed_eval.sealed_digest(split)
    sealed_eval.SPLIT.write_text(json.dumps(split, indent=1) + "\n")
    print(f"open: {len(p_open)} programs, {len(split['codebases']['open'])} codebases; sealed: {len(p_sealed)} "
          f"programs, {len(split['codebases']['sealed'])} codebases; sealed sha256 {split['sealed_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
