"""`mcjax-guard` command line.

    mcjax-guard [options] python train.py [args]     run a program under the guard
    mcjax-guard -n 2 python train.py                 ... as 2 local JAX processes (CPU)
    mcjax-guard demo                                 built-in example: 2 processes that diverge
    mcjax-guard report DIR [--format text|json|html] re-render a saved report
    mcjax-guard dump                                 snapshot report of a running job (SIGUSR1)
    mcjax-guard --version

Options not given on the command line come from [tool.mcjax.guard] in the nearest pyproject.toml
with a [tool.mcjax] table at or above the working directory.
"""

from __future__ import annotations

import argparse
import sys

from runtime_guard import __version__
from runtime_guard.local_job import DEFAULT_DEVICES
from runtime_guard.settings import EXIT_DETECTED, GUARD_TABLE, MODES, GuardSettings, project_settings

SUBCOMMANDS = ("run", "demo", "report", "dump")

EPILOG = f"""\
exit status: the program's own status when no problem was found; {EXIT_DETECTED} when the guard
detected a divergence, an early exit, a dead process or a hang (report written); 2 on usage errors.

subcommands: demo (built-in example), report DIR (re-render), dump (snapshot of a running job).
"""


# Built-in defaults of the options that [tool.mcjax.guard] may set (the command line wins).
RUN_DEFAULTS: dict[str, object] = {
    "mode": "fast", "devices_per_process": None, "report_dir": "", "timeout": 0.0,
    "died_after": GuardSettings.died_after, "collective_timeout": 600.0, "exact": False, "kill": True,
    "native": False, "locals": False, "keep_hash_seed": False, "quiet": False,
}


def add_run_options(p: argparse.ArgumentParser) -> None:
    # Defaults are None here: an option not given falls back to [tool.mcjax.guard], then RUN_DEFAULTS.
    p.add_argument("--mode", choices=MODES, default=None,
                   help="fast (default): compare in the background, report within ~2 s; strict: check "
                        "every cross-process dispatch before it runs and raise DivergenceError")
    p.add_argument("-n", "--processes", type=int, default=None, metavar="N",
                   help="launch N local processes (CPU devices, coordinator on a free port of 127.0.0.1)")
    p.add_argument("--devices-per-process", type=int, default=None, metavar="K",
                   help=f"CPU devices per process with -n (default: JAX_NUM_CPU_DEVICES, else XLA_FLAGS' "
                        f"--xla_force_host_platform_device_count, else {DEFAULT_DEVICES})")
    p.add_argument("--keep-hash-seed", action="store_true", default=None,
                   help="with -n: give every process the caller's PYTHONHASHSEED (default: a fixed seed S "
                        "becomes S+i in process i, as separate hosts hash strings differently)")
    p.add_argument("--report-dir", default=None, metavar="DIR",
                   help="where reports go (default ./mcjax-reports/<timestamp>; created only for a report)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="hang threshold: no progress anywhere for this long (default: 60 s until step "
                        "times are learned, then 10x the longest step, at least 20 s)")
    p.add_argument("--died-after", type=float, default=None, metavar="SECONDS",
                   help=f"a process whose heartbeat stops this long is reported dead (default {GuardSettings.died_after:g})")
    p.add_argument("--collective-timeout", type=float, default=None, metavar="SECONDS",
                   help="with -n: XLA CPU collectives give up after this long (backstop; default 600)")
    p.add_argument("--exact", action="store_true", default=None,
                   help="fast mode: check shapes on every call, not only when JAX compiles (slower)")
    p.add_argument("--no-kill", dest="kill", action="store_false", default=None,
                   help="report but do not stop the processes")
    p.add_argument("--no-prefix", dest="prefix", action="store_false",
                   help="with -n: do not prefix each output line with its process index")
    p.add_argument("--native", action="store_true", default=None, help="include native (C++) frames in stacks")
    p.add_argument("--locals", action="store_true", default=None, help="include local variables in stacks")
    p.add_argument("-q", "--quiet", action="store_true", default=None,
                   help="no banner, status line or summary: only the program's output and reports")
    p.add_argument("--version", action="version", version=f"mcjax-guard {__version__}")


def _run_parser(prog: str = "mcjax-guard") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Run a multi-controller JAX program with every cross-process dispatch checked "
        "across processes, and explain hangs.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
        usage=f"{prog} [options] python train.py [args...]\n       {prog} {{demo,report,dump}} ...")
    add_run_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="the program: python train.py [args]")
    return p


def resolve_options(a: argparse.Namespace, project: dict[str, object]) -> dict[str, object]:
    """Each run option: the command line's, else [tool.mcjax.guard]'s, else RUN_DEFAULTS'."""
    given = {k: getattr(a, k) for k in RUN_DEFAULTS if getattr(a, k, None) is not None}
    return {**RUN_DEFAULTS, **project, **given}


def settings_from_options(o: dict[str, object]) -> GuardSettings:
    return GuardSettings(mode=o["mode"], report_dir=o["report_dir"], timeout=o["timeout"],  # type: ignore[arg-type]
                         died_after=o["died_after"], exact=o["exact"], kill=o["kill"], quiet=o["quiet"])  # type: ignore[arg-type]


def run(argv: list[str]) -> int:
    from mcjax_lint.config import ConfigError

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
        o = resolve_options(a, project_settings("guard", GUARD_TABLE))
        command = parse_command(a.command)
        settings = settings_from_options(o)
        opts = Options(processes=a.processes, devices_per_process=o["devices_per_process"],  # type: ignore[arg-type]
                       native=bool(o["native"]), locals=bool(o["locals"]), keep_hash_seed=bool(o["keep_hash_seed"]),
                       collective_timeout=float(o["collective_timeout"]), prefix_output=a.prefix)  # type: ignore[arg-type]
        supervisor = Supervisor(command, settings, opts)
    except (UsageError, ValueError, ConfigError) as e:
        print(f"mcjax-guard: error: {e}", file=sys.stderr)
        return 2
    return supervisor.run()


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
