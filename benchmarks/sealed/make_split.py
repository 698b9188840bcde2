"""Split the sealed evaluation in two halves at random and record the split (run once).

Programs (benchmarks/sealed/programs/*) and codebases (benchmarks/sealed/codebases.json) are each
shuffled with random.Random(seed) and cut in half: the first half is "open", the rest "sealed".
Writes benchmarks/sealed/split.json (or `--out`) with the seed, both halves, every sealed file's
path and the sha256 that benchmarks/sealed_eval.py checks. Rerunning with the recorded seed
reproduces it. The one implementation is benchmarks/evalset/split.py.

    python benchmarks/sealed/make_split.py --seed N [--out PATH]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import split  # noqa: E402  (the one implementation, shared by both sets)

if __name__ == "__main__":
    sys.exit(split.make_split(__doc__, Path(__file__).resolve().parent, with_codebases=True))
