"""Split the seventeenth sealed set's codebases in two halves at random and record it (run once).

The repos of benchmarks/sealed17/codebases.json, sorted, are shuffled with random.Random(seed) and
cut in half: the first half is "open", the rest "sealed" (the method of benchmarks/sealed/
make_split.py). Writes benchmarks/sealed17/codebases_split.json (or `--out`) with the seed, both
halves and each codebase's pinned commit; rerunning with the recorded seed reproduces it. The one
implementation is benchmarks/evalset/split.py.

    python benchmarks/sealed17/split_codebases.py --seed N [--out PATH]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import split  # noqa: E402  (the one implementation, shared by the sets)

if __name__ == "__main__":
    sys.exit(split.split_codebases(__doc__, Path(__file__).resolve().parent))
