"""Run one sealed24-evaluation program as 2 real JAX processes on CPU and classify the outcome.

The one implementation is benchmarks/evalset/run_pair.py (the outcomes agree / diverge / error /
hang are described there); this entry point runs it for the programs of benchmarks/sealed24/.

    python benchmarks/sealed24/run_pair.py benchmarks/sealed24/programs/<id>/hazard.py [--timeout 60]
    python benchmarks/sealed24/run_pair.py --confirm benchmarks/sealed24/programs  # every pair, in turn
    python benchmarks/sealed24/run_pair.py --rerun-hazards benchmarks/sealed24/programs --json OUT
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import run_pair  # noqa: E402  (the one implementation, shared by the sets)

if __name__ == "__main__":
    sys.exit(run_pair.main(__doc__, details=True))
