"""`mcjax-guard demo`: the whole story on one machine, in about ten seconds.

Two local JAX processes run a small training loop in which process 0 alone evaluates the loss
over the global batch (a collective). The guard reports the first divergent dispatch with each
process's call site; then the linter points at the same line without running anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

EXAMPLE = Path(__file__).resolve().parent / "examples" / "rank0_branch.py"


def main(argv: list[str] | None = None) -> int:
    from runtime_guard.launcher import Command, Options, Supervisor
    from runtime_guard.settings import EXIT_DETECTED, MODES, GuardSettings

    p = argparse.ArgumentParser(prog="mcjax-guard demo", description=__doc__)
    p.add_argument("--mode", choices=MODES, default="fast")
    p.add_argument("-n", "--processes", type=int, default=2)
    p.add_argument("--report-dir", default=os.path.join("mcjax-reports", "demo-" + time.strftime("%Y%m%d-%H%M%S")))
    a = p.parse_args(argv)

    console = Console(stderr=True)
    console.print(Rule("mcjax demo"))
    console.print(f"Running [bold]{EXAMPLE.name}[/] as {a.processes} local JAX processes under the guard "
                  f"({a.mode} mode):\n  mcjax-guard -n {a.processes} python {EXAMPLE}\n", highlight=False)
    settings = GuardSettings(mode=a.mode, report_dir=a.report_dir)
    sup = Supervisor(Command(sys.executable, [], [str(EXAMPLE)]), settings,
                     Options(processes=a.processes, collective_timeout=60, drop_native_logs=True))
    code = sup.run()

    console.print(Rule("mcjax-lint"))
    console.print(f"The linter finds the same bug without running anything:\n  mcjax-lint {EXAMPLE}\n", highlight=False)
    from mcjax_lint.cli import main as lint_main

    lint_code = lint_main([str(EXAMPLE), "--no-cache"])

    console.print(Rule())
    guard_ok = code == EXIT_DETECTED and sup.report is not None and sup.report.kind == "divergence"
    if guard_ok and lint_code == 1:
        console.print(f"Both found it. The full report: {Path(a.report_dir).resolve()}/report.html", highlight=False)
        return 0
    console.print(f"[red]demo did not go as expected:[/] guard exit {code} "
                  f"({sup.report.kind if sup.report else 'no report'}), mcjax-lint exit {lint_code}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
