"""Split the twenty-third sealed evaluation's programs in two halves at random and record the split.

Programs (benchmarks/sealed24/programs/*, only those confirmed in confirmations.json) are shuffled
with random.Random(seed) and cut in half: the first half is "open", the rest "sealed". The codebase
part of the set (codebases.json) is split separately by split_codebases.py into
codebases_split.json; its two halves are copied here so that one sha256 covers both sealed parts.
Writes benchmarks/sealed24/split.json (or `--out`) with the seed, both halves, every sealed file's
path and the sha256 that `benchmarks/sealed_eval.py --set sealed24` checks. Rerunning with the
recorded seed (and the same programs) reproduces it. The one implementation is
benchmarks/evalset/split.py.

    python benchmarks/sealed24/make_split.py --seed N [--out PATH]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import split  # noqa: E402  (the one implementation, shared by the sets)

if __name__ == "__main__":
    sys.exit(split.make_split(__doc__, Path(__file__).resolve().parent, with_codebases=False))
