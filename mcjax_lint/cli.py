"""`mcjax-lint` / `python -m mcjax_lint`: find multi-controller JAX hazards.

Exit status: 0 no findings, 1 findings (or, with --diff, fixes to apply), 2 a usage or
configuration error, a path that does not exist, or a file that could not be analysed (the
findings of every other file are still reported).

`mcjax-lint rule CODE` prints a rule's page instead (as `ruff rule`); a path called `rule` is
linted as `./rule`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

from mcjax_lint import __version__, observed
from mcjax_lint.config import ConfigError, LintConfig, check_selectors, load_config
from mcjax_lint.files import Excluder, discover, display_path, resolve
from mcjax_lint.model import FileError, Finding

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_MAX_FIX_ROUNDS = 10


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mcjax-lint",
        description="Find multi-controller JAX hazards: process-dependent control flow, nondeterministic "
        "order, process-dependent shapes and initialization order around collective work.",
        epilog="Exit status: 0 no findings, 1 findings, 2 usage/configuration error or a file that could "
        "not be analysed. Configuration: [tool.mcjax] in pyproject.toml (see docs/lint.md). "
        "`mcjax-lint rule CODE` prints a rule's page; `mcjax-lint rule` lists the rules.",
    )
    p.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                   help="files or directories to lint (default: the current directory)")
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="configuration file (pyproject.toml with [tool.mcjax], or a TOML file with the keys at top level)")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text",
                   help="output format (default: text)")
    p.add_argument("-o", "--output-file", type=Path, metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to enable (replaces the configured selection)")
    p.add_argument("--extend-select", metavar="CODES", help="codes or prefixes to enable on top of the selection")
    p.add_argument("--ignore", metavar="CODES", help="codes or prefixes to disable (added to the configured ones)")
    p.add_argument("--confidence", choices=("certain", "all"), default=None,
                   help="report only findings whose every step is certain, or all (default: the "
                        "configured `confidence`, else all; a finding with a guess is at most a warning)")
    p.add_argument("--statistics", action="store_true", help="print the number of findings per rule instead of the findings")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--show-source", dest="show_source", action="store_true", default=None,
                     help="show the source line under each finding (default)")
    src.add_argument("--no-show-source", dest="show_source", action="store_false", help="do not show source lines")
    p.add_argument("-q", "--quiet", action="store_true", help="print the findings only: no summary line")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings (errors still exit 2)")
    fx = p.add_mutually_exclusive_group()
    fx.add_argument("--fix", action="store_true", help="apply the safe fixes in place, then report what remains")
    fx.add_argument("--diff", action="store_true", help="print the safe fixes as a unified diff; change nothing")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache (.mcjax_cache/)")
    p.add_argument("--observed", type=Path, metavar="FILE",
                   help="functions a guarded run saw doing cross-process work (a run file of mcjax-guard, or a "
                        "directory of them); .mcjax_cache/observed/ is read without it, unless --no-cache")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="worker processes (default: the CPUs available)")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply exclude patterns to files named on the command line too (pre-commit sets this)")
    p.add_argument("--timings", action="store_true", help=argparse.SUPPRESS)  # phase times on stderr (benchmarks)
    p.add_argument("--version", action="version", version=f"mcjax-lint {__version__}")
    return p


def _codes(value: str | None, flag: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = [c for c in re.split(r"[,\s]+", value) if c]
    return check_selectors(items, flag)


def _apply_cli(config: LintConfig, args: argparse.Namespace) -> LintConfig:
    sel = _codes(args.select, "--select")
    ext = _codes(args.extend_select, "--extend-select")
    ign = _codes(args.ignore, "--ignore")
    if sel is not None:
        config = replace(config, select=sel)
    if ext:
        config = replace(config, extend_select=config.extend_select + ext)
    if ign:
        config = replace(config, ignore=config.ignore + ign)
    if args.confidence is not None:
        config = replace(config, confidence=args.confidence)
    return config


def _start_dir(paths: list[Path]) -> Path:
    resolved = [str(r) for r in map(resolve, paths) if r is not None]  # a link loop is reported later
    if not resolved:
        return Path.cwd()
    try:
        common = Path(os.path.commonpath(resolved))
    except ValueError:  # different drives
        return Path.cwd()
    return common if common.is_dir() else common.parent


def _err(msg: str) -> None:
    print(f"mcjax-lint: error: {msg}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """The command line (`argv`: the arguments; None: this process's, as the program)."""
    if argv is not None:
        return _main(list(argv))
    code = _main(sys.argv[1:])
    # As the program (the console script, `python -m mcjax_lint`) nothing is left to do but
    # flush the output: the run's summaries and index are millions of objects in reference
    # cycles, and the collector's last pass over them at interpreter exit took ~3 s of a 687 kLOC
    # run. So exit now, as mypy does (workers are joined, the cache is written and closed).
    if not _may_exit_hard():
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code  # (a closed or broken stream: the usual exit reports it)
    os._exit(code)


def _may_exit_hard() -> bool:
    """Whether this process is mcjax-lint itself (its console script or `python -m mcjax_lint`)
    with nothing that still has work at interpreter exit: a profiler or tracer (`python -m
    cProfile`), coverage, or a program that called `main()` without arguments."""
    main_mod = sys.modules.get("__main__")
    spec = getattr(main_mod, "__spec__", None)
    ours = (spec is not None and spec.name == "mcjax_lint.__main__") \
        or os.path.basename(getattr(main_mod, "__file__", None) or "") == "mcjax-lint"
    return ours and sys.getprofile() is None and sys.gettrace() is None and "coverage" not in sys.modules


def _main(argv: list[str]) -> int:
    if argv[:1] == ["rule"]:
        from mcjax_lint.output.rule_pages import rule_command

        return rule_command(argv[1:], _rules())
    args = build_parser().parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        _err("--jobs must be at least 1")
        return EXIT_ERROR
    paths: list[Path] = args.paths or [Path(".")]
    try:
        config = load_config(args.config, _start_dir(paths))
        config = _apply_cli(config, args)
        # What guarded runs saw doing cross-process work (docs/causes.md).
        config = observed.apply_to_config(config, args.observed, project=not args.no_cache)
    except ConfigError as e:
        _err(str(e))
        return EXIT_ERROR

    root = config.project_root
    excluder = Excluder(root or Path.cwd().resolve(), config.all_excludes)
    missing: list[Path] = []
    rejected: list[tuple[Path, str]] = []
    gi = config.respect_gitignore
    targets = discover(paths, excluder, force_exclude=args.force_exclude, missing=missing, respect_gitignore=gi,
                       rejected=rejected)
    # Cross-module facts come from the whole project, whichever files were passed.
    project_files = discover([root], excluder, respect_gitignore=gi) if root is not None else targets
    path_errors = [FileError(str(p), "no such file or directory") for p in missing] + [
        FileError(display_path(p) if p.is_absolute() else str(p), why) for p, why in rejected]
    # Without a project root the files given are the whole project, and the cache lives in the
    # working directory (as ruff's does): the runner keys it by the root it is handed.
    run_config = config if root is not None else replace(config, project_root=Path.cwd().resolve())

    from mcjax_lint.runner import lint_files

    result = lint_files(targets, project_files, run_config, jobs=args.jobs, use_cache=not args.no_cache)
    errors = path_errors + list(result.file_errors)

    if args.fix or args.diff:
        from mcjax_lint import fixes

        if args.diff:
            return _diff(result, errors, fixes)
        fixed = 0
        for _ in range(_MAX_FIX_ROUNDS):
            n, fix_errors = _fix_once(result, fixes)
            errors.extend(fix_errors)
            if not n:
                break
            fixed += n
            result = lint_files(targets, project_files, run_config, jobs=args.jobs, use_cache=not args.no_cache)
            errors = path_errors + list(result.file_errors) + [e for e in errors if e.message.startswith("fixes would")]
        if fixed:
            print(f"Fixed {fixed} finding{'s' if fixed != 1 else ''}.", file=sys.stderr)

    for note in result.stats.notes:
        print(f"mcjax-lint: warning: {note}", file=sys.stderr)
    if args.timings:
        st = result.stats
        phases = " ".join(f"{k}={v:.3f}s" for k, v in st.timings.items())
        print(f"timings: {phases} files={st.files} targets={st.targets} read={st.read} summarized={st.summarized} "
              f"analyzed={st.analyzed} prefiltered={st.prefiltered} cached={st.findings_cached} "
              f"index_built={st.index_built} jobs={st.jobs}", file=sys.stderr)
        for took, rel in st.slowest[:5]:
            print(f"timings: {took:7.2f}s {rel}", file=sys.stderr)
        if st.library_modules:
            print(f"timings: library modules {st.library_modules} ({st.library_modules_read} read from source)", file=sys.stderr)
        for note in st.info:
            print(f"mcjax-lint: note: {note}", file=sys.stderr)
    return _report(result.findings, errors, result, config, args)


def _by_file(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in findings:
        out.setdefault(f.path, []).append(f)
    return out


def _read_text(path: Path) -> tuple[str, bool]:
    data = path.read_bytes()
    text = data.decode("utf-8")
    bom = text.startswith("\ufeff")
    return (text[1:] if bom else text), bom


def _fix_once(result, fixes) -> tuple[int, list[FileError]]:
    applied = 0
    errs: list[FileError] = []
    for display, found in _by_file([f for f in result.findings if f.fix is not None]).items():
        src = result.files[display]
        source, bom = _read_text(src.path)
        res = fixes.apply_fixes(source, found)
        if res.error:
            errs.append(FileError(display, res.error))
            continue
        if res.applied:
            src.path.write_bytes((("\ufeff" if bom else "") + res.source).encode("utf-8"))
            applied += len(res.applied)
    return applied, errs


def _diff(result, errors: list[FileError], fixes) -> int:
    out = []
    n = 0
    for display, found in _by_file([f for f in result.findings if f.fix is not None]).items():
        source, _ = _read_text(result.files[display].path)
        res = fixes.apply_fixes(source, found)
        if res.error:
            errors.append(FileError(display, res.error))
        elif res.applied:
            out.append(fixes.unified_diff(display, source, res.source))
            n += len(res.applied)
    sys.stdout.write("".join(out))
    for e in errors:
        print(f"{e.path}: error: {e.message}", file=sys.stderr)
    if n:
        print(f"Would fix {n} finding{'s' if n != 1 else ''}.", file=sys.stderr)
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if n else EXIT_OK


def _rules() -> dict[str, object]:
    from mcjax_lint.suppressions import UNUSED_SUPPRESSION

    try:
        from mcjax_lint.rules import RULES
    except ImportError:
        RULES = {}
    return {**RULES, UNUSED_SUPPRESSION.code: UNUSED_SUPPRESSION}


def _report(findings: list[Finding], errors: list[FileError], result, config: LintConfig, args) -> int:
    from mcjax_lint.output import OutputContext, get_renderer

    files = result.files
    line_cache: dict[str, list[str] | None] = {}

    def read_lines(display: str) -> list[str] | None:
        if display not in line_cache:
            src = files.get(display)
            try:
                text = src.path.read_bytes().decode("utf-8", errors="replace") if src else None
            except OSError:
                text = None
            line_cache[display] = None if text is None else re.split(r"\r\n|\r|\n", text.lstrip("\ufeff"))
        return line_cache[display]

    def absolute(display: str) -> Path:
        src = files.get(display)
        return src.path if src else Path(display).resolve()

    out_stream = open(args.output_file, "w", encoding="utf-8") if args.output_file else sys.stdout
    color = (args.output_file is None and _wants_color())
    ctx = OutputContext(
        findings=findings,
        file_errors=errors,
        read_lines=read_lines,
        rules=_rules(),
        show_source=True if args.show_source is None else args.show_source,
        project_root=config.project_root,
        absolute=absolute,
        color=color,
    )
    try:
        # File errors: one line each on stderr in every format (SARIF and github also carry them).
        for e in errors:
            print(f"{e.path}: error: {e.message}", file=sys.stderr)
        if args.statistics:
            from mcjax_lint.output import statistics

            out_stream.write(statistics.render(ctx, "json" if args.format == "json" else "text"))
        elif args.format == "text":
            from mcjax_lint.output import text

            text.print_segments(text.render_segments(ctx, summary=not args.quiet), out_stream, color)
        else:
            out_stream.write(get_renderer(args.format)(ctx))
        out_stream.flush()
    finally:
        if out_stream is not sys.stdout:
            out_stream.close()
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _wants_color() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()
