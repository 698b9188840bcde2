"""Split the sealed evaluation in two halves at random and record the split (run once).

Programs (benchmarks/sealed/programs/*) and codebases (benchmarks/sealed/codebases.json) are each
shuffled with random.Random(seed) and cut in half: the first half is "open", the rest "sealed".
Writes benchmarks/sealed/split.json with the seed, both halves, every sealed file's path and the
sha256 that benchmarks/sealed_eval.py checks. Rerunning with the recorded seed reproduces it.

    python benchmarks/sealed/make_split.py --seed N
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sealed_eval import SPLIT, program_files, sealed_digest  # noqa: E402


def halves(items: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    items = sorted(items)
    rng.shuffle(items)
    k = len(items) // 2
    return sorted(items[:k]), sorted(items[k:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    programs = [p.name for p in (HERE / "programs").iterdir() if p.is_dir()]
    repos = [c["repo"] for c in json.loads((HERE / "codebases.json").read_text())["codebases"]]
    p_open, p_sealed = halves(programs, rng)
    c_open, c_sealed = halves(repos, rng)
    split = {"seed": args.seed, "method": "random.Random(seed): shuffle sorted program ids, first half open; "
                                          "then shuffle sorted codebase repos, first half open",
             "programs": {"open": p_open, "sealed": p_sealed},
             "codebases": {"open": c_open, "sealed": c_sealed}}
    split["sealed_files"] = [f.relative_to(HERE).as_posix() for pid in p_sealed for f in program_files(pid)]
    split["sealed_sha256"] = sealed_digest(split)
    SPLIT.write_text(json.dumps(split, indent=1) + "\n")
    print(f"open: {len(p_open)} programs, {len(c_open)} codebases; sealed: {len(p_sealed)} programs, "
          f"{len(c_sealed)} codebases; sealed sha256 {split['sealed_sha256']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
