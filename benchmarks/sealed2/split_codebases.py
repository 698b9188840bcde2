"""Split the second sealed set's codebases in two halves at random and record it (run once).

The repos of benchmarks/sealed2/codebases.json, sorted, are shuffled with random.Random(seed) and
cut in half: the first half is "open", the rest "sealed" (the method of benchmarks/sealed/
make_split.py). Writes benchmarks/sealed2/codebases_split.json with the seed, both halves and each
codebase's pinned commit; rerunning with the recorded seed reproduces it.

    python benchmarks/sealed2/split_codebases.py --seed N
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLIT = HERE / "codebases_split.json"


def halves(items: list[str], rng: random.Random) -> tuple[list[str], list[str]]:
    items = sorted(items)
    rng.shuffle(items)
    k = len(items) // 2
    return sorted(items[:k]), sorted(items[k:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    pins = {c["repo"]: c["commit"] for c in json.loads((HERE / "codebases.json").read_text())["codebases"]}
    c_open, c_sealed = halves(list(pins), random.Random(args.seed))
    split = {"seed": args.seed,
             "method": "random.Random(seed).shuffle of the sorted repos of codebases.json; first half open",
             "codebases": {"open": c_open, "sealed": c_sealed},
             "commits": dict(sorted(pins.items()))}
    SPLIT.write_text(json.dumps(split, indent=1) + "\n")
    print(f"open: {', '.join(c_open)}\nsealed: {', '.join(c_sealed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
