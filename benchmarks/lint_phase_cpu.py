"""CPU seconds per phase of one serial, uncached lint run (the real pipeline, in this process).

    cd <a project, e.g. benchmarks/.work/tree> && python <checkout>/benchmarks/lint_phase_cpu.py .

Runs `mcjax-lint --no-cache --jobs 1` in-process and prints, per runner phase (summaries,
libraries, index, prefilter, analysis), the CPU time it took: on a shared machine CPU time varies
much less than wall time, and serially every phase's cost is its own. Which checkout is measured
is the one on PYTHONPATH (or the installed package).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

from mcjax_lint import cli, runner


def main(argv: list[str]) -> int:
    cpu: dict[str, float] = {}
    last = [time.process_time()]
    phase = runner.RunStats.phase

    def timed_phase(self, name: str, since: float) -> float:
        now = time.process_time()
        cpu[name] = cpu.get(name, 0.0) + now - last[0]
        last[0] = now
        return phase(self, name, since)

    runner.RunStats.phase = timed_phase
    t0 = time.process_time()
    with open(os.devnull, "w") as out, contextlib.redirect_stdout(out):
        cli.main(["--format", "json", "--exit-zero", "--no-cache", "--jobs", "1", *argv])
    print("CPU s per phase: " + " ".join(f"{k}={v:.2f}" for k, v in cpu.items())
          + f" total={time.process_time() - t0:.2f} (load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
