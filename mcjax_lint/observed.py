"""Functions a guarded run saw doing cross-process work: knowledge the linter learns from mcjax-guard.

`mcjax-guard` records the qualified names of the Python functions on the stack of every
cross-process dispatch it sees (the first time each call position dispatches; see
docs/causes.md) and writes them, once per run, to `<project>/<cache-dir>/observed/run-*.json`.
`mcjax-lint` reads that directory when it exists (and `--observed FILE`): those functions count
as collective work, like `collective-functions` in `[tool.mcjax]`, and each finding that rests on
one says so ("seen doing cross-process work in a guarded run of train.py on 2026-11-25").

A run file:

    {"mcjax_observed": 1, "program": "train.py", "time": 1764100000.0,
     "functions": [{"name": "mylib.ckpt.save_all", "file": "/.../mylib/ckpt.py"}, ...]}
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from mcjax_lint.config import ConfigError, LintConfig
from mcjax_lint.settings import AnalysisSettings

FORMAT = 1
SUBDIR = "observed"
# Run files kept in the cache directory; older ones are deleted as new runs are written.
KEEP_RUNS = 50


class ObservedError(ConfigError):
    """An observed-functions file that cannot be used, described in one line."""


def observed_dir(project_root: Path | None, cache_dir: str) -> Path | None:
    """Where guarded runs leave their run files for this project (None: no project root)."""
    return None if project_root is None else Path(project_root) / cache_dir / SUBDIR


def load(path: str | os.PathLike[str]) -> dict[str, str]:
    """{qualified name: provenance} from a run file, or from every run file in a directory.
    Raises ObservedError for a path that does not exist or a file that is not a run file."""
    p = Path(path)
    if p.is_dir():
        return _merge(_read(f) for f in _run_files(p))
    if not p.is_file():
        raise ObservedError(f"{p}: observed-functions file not found")
    return _merge([_read(p)])


def load_project(project_root: Path | None, cache_dir: str) -> dict[str, str]:
    """What guarded runs of this project observed; {} when there is nothing (or nothing usable)."""
    d = observed_dir(project_root, cache_dir)
    if d is None or not d.is_dir():
        return {}
    runs = []
    for f in _run_files(d):
        try:
            runs.append(_read(f))
        except ObservedError:
            continue  # a half-written or foreign file must not stop the linter
    return _merge(runs)


def apply_to_config(config: LintConfig, path: str | os.PathLike[str] | None = None, project: bool = True) -> LintConfig:
    """`config` with what guarded runs of its project observed (unless not `project`: the
    cache directory is not to be read), and `path` (`--observed FILE`, a run file or a directory
    of them) when given."""
    seen = load_project(config.project_root, config.cache_dir) if project else {}
    if path is not None:
        seen = {**load(path), **seen}
    return replace(config, analysis=with_observed(config.analysis, seen)) if seen else config


def with_observed(settings: AnalysisSettings, observed: dict[str, str]) -> AnalysisSettings:
    """`settings` with the observed functions counted as collective work. The user's own
    declarations win: a function declared benign or collective keeps its declaration."""
    from mcjax_lint.knowledge import matches

    new = {q: how for q, how in observed.items()
           if not matches(q, settings.benign_functions) and not matches(q, settings.collective_functions)}
    if not new:
        return settings
    return replace(settings, collective_functions=settings.collective_functions + tuple(sorted(new)),
                   observed_functions=settings.observed_functions + tuple(sorted(new.items())))


def write_run(directory: str | os.PathLike[str], functions: Iterable[dict], program: str = "",
              keep: int = KEEP_RUNS) -> Path | None:
    """Write one run's observed functions ({"name", "file"} each) as a run file in `directory`
    (atomically) and delete the oldest run files beyond `keep`. None when there is nothing."""
    from mcjax_lint.modnames import module_name

    out: dict[str, dict] = {}
    for fn in functions:
        name, file = str(fn.get("name") or ""), str(fn.get("file") or "")
        if name.startswith("__main__.") and file.endswith(".py"):
            # The program itself: the linter names a file by its path, not `__main__`.
            name = f"{module_name(file)}.{name[len('__main__.'):]}"
        if name and "<" not in name and not name.startswith("__main__."):
            out.setdefault(name, {"name": name, "file": file})
    if not out:
        return None
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    gitignore = d.parent / ".gitignore"
    if not gitignore.exists():
        try:
            gitignore.write_text("*\n")
        except OSError:
            pass
    now = time.time()
    path = d / f"run-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}-{os.getpid()}.json"
    data = {"mcjax_observed": FORMAT, "program": program, "time": now, "functions": sorted(out.values(), key=lambda f: f["name"])}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    for old in _run_files(d)[:-keep] if keep > 0 else []:
        try:
            old.unlink()
        except OSError:
            pass
    return path


def provenance(program: str, when: float) -> str:
    """How a finding says where the knowledge came from."""
    day = time.strftime("%Y-%m-%d", time.gmtime(when)) if when else "an earlier run"
    prog = f" of {program}" if program else ""
    return f"seen doing cross-process work in a guarded run{prog} on {day}"


def _run_files(d: Path) -> list[Path]:
    return sorted((f for f in d.glob("run-*.json") if f.is_file()), key=lambda f: f.name)


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ObservedError(f"{path}: not an observed-functions file ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict) or data.get("mcjax_observed") != FORMAT or not isinstance(data.get("functions"), list):
        raise ObservedError(f"{path}: not an observed-functions file (expected \"mcjax_observed\": {FORMAT} and a "
                            f"\"functions\" list, as mcjax-guard writes)")
    return data


def _merge(runs: Iterable[dict]) -> dict[str, str]:
    """Name -> provenance of the earliest run that saw it (stable across later runs, so the
    linter's cache is not invalidated by each run that sees the same functions again)."""
    first: dict[str, tuple[float, str]] = {}
    for run in runs:
        when = run.get("time") if isinstance(run.get("time"), (int, float)) else 0.0
        prog = os.path.basename(str(run.get("program") or ""))
        for fn in run["functions"]:
            name = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(name, str) or not name or "<" in name:
                continue
            if name not in first or when < first[name][0]:
                first[name] = (when, prog)
    return {q: provenance(prog, when) for q, (when, prog) in sorted(first.items())}
