"""Export the seventeenth sealed set's codebases (benchmarks/sealed17/codebases.json) from git checkouts.

The one implementation is benchmarks/evalset/prepare_codebases.py (where the checkouts may lie,
what `--clone` fetches, what is written); this entry point runs it for benchmarks/sealed17/. Each
codebase's line also counts the code lines that call a multi-process JAX API, which must not be 0.

    python benchmarks/sealed17/prepare_codebases.py CHECKOUTS OUT [--clone] [--only owner/name ...]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import prepare_codebases  # noqa: E402  (the one implementation, shared by the sets)

if __name__ == "__main__":
    sys.exit(prepare_codebases.main(__doc__, Path(__file__).resolve().parent, multihost_api=True))
