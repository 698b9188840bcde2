"""Export the sealed evaluation's codebases (benchmarks/sealed/codebases.json) from git checkouts.

The one implementation is benchmarks/evalset/prepare_codebases.py (where the checkouts may lie,
what is written); this entry point runs it for benchmarks/sealed/. It writes the `.py` files of
each recorded commit to OUT/<owner>+<name>/ and a line per codebase: files, lines, commit.

    python benchmarks/sealed/prepare_codebases.py CHECKOUTS OUT [--only owner/name ...]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import prepare_codebases  # noqa: E402  (the one implementation, shared by both sets)

if __name__ == "__main__":
    sys.exit(prepare_codebases.main(__doc__, Path(__file__).resolve().parent, multihost_api=False))
