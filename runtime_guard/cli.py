"""`mcjax-guard` command line.

    mcjax-guard [options] python train.py [args]     run a program under the guard
    mcjax-guard -n 2 python train.py                 ... as 2 local JAX processes (CPU)
    mcjax-guard demo                                 built-in example: 2 processes that diverge
    mcjax-guard report DIR [--format text|json|html] re-render a saved report
    mcjax-guard dump                                 snapshot report of a running job (SIGUSR1)
"""

from __future__ import annotations

import argparse
import sys

from runtime_guard.settings import EXIT_DETECTED, MODES, GuardSettings

SUBCOMMANDS = ("run", "demo", "report", "dump")

EPILOG = f"""\
exit status: the program's own status when no problem was found; {EXIT_DETECTED} when the guard
detected a divergence, an early exit, a dead process or a hang (report written); 2 on usage errors.

subcommands: demo (built-in example), report DIR (re-render), dump (snapshot of a running job).
"""


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=MODES, default="fast",
                   help="fast (default): compare in the background, report within ~2 s; strict: check "
                        "every cross-process dispatch before it runs and raise DivergenceError")
    p.add_argument("-n", "--processes", type=int, default=None, metavar="N",
                   help="launch N local processes (CPU devices, loopback coordinator on a free port)")
    p.add_argument("--devices-per-process", type=int, default=1, metavar="K", help="CPU devices per process with -n")
    p.add_argument("--report-dir", default="", metavar="DIR",
                   help="where reports go (default ./mcjax-reports/<timestamp>; created only for a report)")
    p.add_argument("--timeout", type=float, default=0.0, metavar="SECONDS",
                   help="hang threshold: no progress anywhere for this long (default: learned from step times)")
    p.add_argument("--died-after", type=float, default=GuardSettings.died_after, metavar="SECONDS",
                   help="a process whose heartbeat stops this long is reported dead")
    p.add_argument("--collective-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="with -n: XLA CPU collectives give up after this long (backstop)")
    p.add_argument("--exact", action="store_true",
                   help="fast mode: check shapes on every call, not only when JAX compiles (slower)")
    p.add_argument("--no-kill", dest="kill", action="store_false", help="report but do not stop the processes")
    p.add_argument("--no-prefix", dest="prefix", action="store_false",
                   help="with -n: do not prefix each output line with its process index")
    p.add_argument("--native", action="store_true", help="include native (C++) frames in stacks")
    p.add_argument("--locals", action="store_true", help="include local variables in stacks")
    p.add_argument("-q", "--quiet", action="store_true", help="no guard messages other than reports")


def _run_parser(prog: str = "mcjax-guard") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Run a multi-controller JAX program with every cross-process dispatch checked "
        "across processes, and explain hangs.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
        usage=f"{prog} [options] python train.py [args...]\n       {prog} {{demo,report,dump}} ...")
    add_run_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program: python train.py [args]")
    return p


def settings_from_args(a: argparse.Namespace) -> GuardSettings:
    return GuardSettings(mode=a.mode, report_dir=a.report_dir, timeout=a.timeout, died_after=a.died_after,
                         exact=a.exact, kill=a.kill, quiet=a.quiet)


def run(argv: list[str]) -> int:
    from runtime_guard.launcher import Options, Supervisor, UsageError, parse_command

    p = _run_parser()
    a = p.parse_args(argv)
    if not a.command:
        p.print_usage(sys.stderr)
        print("mcjax-guard: error: no program given", file=sys.stderr)
        return 2
    if a.processes is not None and not 1 <= a.processes <= 64:
        print("mcjax-guard: error: -n must be between 1 and 64", file=sys.stderr)
        return 2
    try:
        command = parse_command(a.command)
        settings = settings_from_args(a)
    except (UsageError, ValueError) as e:
        print(f"mcjax-guard: error: {e}", file=sys.stderr)
        return 2
    opts = Options(processes=a.processes, devices_per_process=a.devices_per_process, native=a.native,
                   locals=a.locals, collective_timeout=a.collective_timeout, prefix_output=a.prefix)
    return Supervisor(command, settings, opts).run()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        sub, rest = argv[0], argv[1:]
        if sub == "run":
            return run(rest)
        if sub == "demo":
            from runtime_guard.demo import main as demo_main

            return demo_main(rest)
        from runtime_guard.report.cli import add_dump_parser, add_report_parser, run_dump, run_report

        p = argparse.ArgumentParser(prog="mcjax-guard")
        subs = p.add_subparsers(dest="sub")
        add_report_parser(subs)
        add_dump_parser(subs)
        a = p.parse_args(argv)
        return run_report(a) if sub == "report" else run_dump(a)
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
