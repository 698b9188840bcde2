"""Run one sealed-evaluation program as 2 real JAX processes on CPU and classify the outcome.

The one implementation is benchmarks/evalset/run_pair.py (the outcomes agree / diverge / error /
hang are described there); this entry point runs it for the programs of benchmarks/sealed/.

    python benchmarks/sealed/run_pair.py benchmarks/sealed/programs/<id>/hazard.py [--timeout 60]
    python benchmarks/sealed/run_pair.py --confirm benchmarks/sealed/programs  # every pair, in turn
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalset import run_pair  # noqa: E402  (the one implementation, shared by both sets)

if __name__ == "__main__":
    sys.exit(run_pair.main(__doc__, details=False))
