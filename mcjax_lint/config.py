"""`[tool.mcjax]` configuration: loading, validation, and rule selection.

Every problem (unknown key, wrong type, unknown rule code, unreadable or malformed TOML) raises
`ConfigError` with one line that names the file and the key; the command line turns it into exit
status 2. Rule selection follows ruff: `select`/`extend-select`/`ignore` take codes or prefixes
(`MCJ1`, `MCJ`, `ALL`), and for each code the most specific matching selector wins, `ignore`
winning ties.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mcjax_lint.files import DEFAULT_EXCLUDE
from mcjax_lint.model import CERTAIN, Severity
from mcjax_lint.settings import AnalysisSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_MAX_FILE_SIZE = 1024 * 1024  # bytes; larger files are reported, not analysed
DEFAULT_CACHE_DIR = ".mcjax_cache"

# Sub-tables other mcjax components may own; the linter ignores them rather than failing.
_OTHER_COMPONENTS = frozenset({"guard", "pytest"})

_CODE_SELECTOR = re.compile(r"^(ALL|MCJ\d{0,3})$")
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\.\*)?$")


class ConfigError(Exception):
    """A configuration problem, described in one line."""


@dataclass(frozen=True)
class LintConfig:
    """Everything the runner and the CLI need besides the paths."""

    project_root: Path | None = None
    config_path: Path | None = None
    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    respect_gitignore: bool = True
    cache_dir: str = DEFAULT_CACHE_DIR
    # Which findings to report: "all", or "certain" (only those whose chain has no guess).
    confidence: str = "all"
    analysis: AnalysisSettings = field(default_factory=AnalysisSettings)

    @property
    def all_excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def analysis_fingerprint(self) -> str:
        """Hash of what the analysis results depend on besides the sources (for the cache)."""
        blob = json.dumps(asdict(self.analysis), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- rule codes ------------------------------------------------------------------------------


def known_codes() -> dict[str, Severity]:
    """Every rule code and its default severity: the analysis rules plus the meta rules."""
    from mcjax_lint.suppressions import UNUSED_SUPPRESSION

    codes: dict[str, Severity] = {}
    try:
        from mcjax_lint.rules import RULES
    except ImportError:  # the rule registry is not there yet (early development)
        RULES = {}
    for code, info in RULES.items():
        codes[code] = Severity(getattr(info, "level", Severity.ERROR))
    codes[UNUSED_SUPPRESSION.code] = UNUSED_SUPPRESSION.severity
    return codes


def check_selectors(values: Iterable[str], where: str, codes: Iterable[str] | None = None) -> tuple[str, ...]:
    codes = list(known_codes() if codes is None else codes)
    out = []
    for v in values:
        if not isinstance(v, str):
            raise ConfigError(f"{where}: expected rule codes as strings, got {v!r}")
        v = v.strip().upper()
        if not _CODE_SELECTOR.match(v) or (v != "ALL" and not any(c.startswith(v) for c in codes)):
            raise ConfigError(f"{where}: unknown rule code or prefix {v!r} (known: {', '.join(sorted(codes))})")
        out.append(v)
    return tuple(out)


def _match_len(code: str, selectors: Iterable[str]) -> int:
    best = -1
    for s in selectors:
        if s == "ALL":
            best = max(best, 0)
        elif code.startswith(s):
            best = max(best, len(s))
    return best


def is_enabled(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """The most specific selector wins; `ignore` wins a tie."""
    s = _match_len(code, select)
    return s >= 0 and s > _match_len(code, ignore)


class RuleFilter:
    """Which codes are reported for which file (select, ignore, per-file-ignores)."""

    def __init__(self, config: LintConfig) -> None:
        self.config = config
        self._select = config.select + config.extend_select
        self._enabled: dict[str, bool] = {}
        self._per_file: dict[str, tuple[str, ...]] = {}

    def enabled(self, code: str) -> bool:
        e = self._enabled.get(code)
        if e is None:
            e = self._enabled[code] = is_enabled(code, self._select, self.config.ignore)
        return e

    def ignored_for(self, rel_path: str) -> tuple[str, ...]:
        """Selectors that per-file-ignores applies to this root-relative posix path."""
        got = self._per_file.get(rel_path)
        if got is None:
            sel: list[str] = []
            parts = rel_path.split("/")
            for pattern, codes in self.config.per_file_ignores:
                if "/" in pattern.rstrip("/"):
                    pat = pattern[2:] if pattern.startswith("./") else pattern
                    hit = fnmatch.fnmatchcase(rel_path, pat) or fnmatch.fnmatchcase(rel_path, pat.rstrip("/") + "/*")
                else:
                    hit = any(fnmatch.fnmatchcase(p, pattern.rstrip("/")) for p in parts)
                if hit:
                    sel.extend(codes)
            got = self._per_file[rel_path] = tuple(sel)
        return got

    def reported(self, code: str, rel_path: str) -> bool:
        if not self.enabled(code):
            return False
        extra = self.ignored_for(rel_path)
        return not extra or is_enabled(code, self._select, self.config.ignore + extra)

    def severity(self, code: str, default: Severity) -> Severity:
        """A finding's severity: the configured one for its code, else `default` (the engine's
        grade), at most a warning where the rule's precision is medium (rules/__init__.py)."""
        got = self.config.severity.get(code)
        if got is not None:
            return got
        if default == Severity.ERROR:  # graded at the rule's own severity: its level decides
            from mcjax_lint.rules import RULES

            info = RULES.get(code)
            if info is not None:
                return info.level
        return default

    def shown_severity(self, finding: Any) -> Severity:
        """The severity a finding is shown with: `severity` above, and never an error when its
        chain holds a guess, whatever the configuration says."""
        sev = self.severity(finding.code, finding.severity)
        if sev == Severity.ERROR and finding.confidence != CERTAIN:
            return Severity.WARNING
        return sev


# --- loading ---------------------------------------------------------------------------------


def find_config_file(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.mcjax] table."""
    start = start.resolve()
    if not start.is_dir():
        start = start.parent
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            try:
                data = _read_toml(candidate)
            except ConfigError:
                raise
            if "mcjax" in data.get("tool", {}):
                return candidate
    return None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read configuration: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None


def project_table(start: Path) -> tuple[Path | None, dict[str, Any]]:
    """The nearest [tool.mcjax] table at or above `start`, and its file ((None, {}) if none)."""
    path = find_config_file(start)
    return (path, _table_from_file(path)) if path is not None else (None, {})


def _table_from_file(path: Path) -> dict[str, Any]:
    data = _read_toml(path)
    tool = data.get("tool")
    if isinstance(tool, dict) and "mcjax" in tool:
        table = tool["mcjax"]
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.mcjax] must be a table")
        return table
    if path.name == "pyproject.toml":
        return {}
    return data  # a dedicated file (e.g. mcjax.toml) holds the keys at top level


def _str_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: '{key}' must be a list of strings, got {_type_name(value)}")
    return tuple(value)


def _names(path: Path, key: str, value: Any) -> tuple[str, ...]:
    names = _str_list(path, key, value)
    for n in names:
        if not _DOTTED_NAME.match(n):
            raise ConfigError(f"{path}: '{key}': {n!r} is not a dotted name like 'pkg.module.function'")
    return names


def _type_name(v: Any) -> str:
    return {str: "a string", int: "an integer", bool: "a boolean", float: "a number", list: "a list",
            dict: "a table"}.get(type(v), type(v).__name__)


def parse_table(table: Mapping[str, Any], path: Path, base: LintConfig | None = None) -> LintConfig:
    """Validate a [tool.mcjax] table into a LintConfig (on top of `base`)."""
    cfg = base or LintConfig()
    analysis = cfg.analysis
    updates: dict[str, Any] = {}
    for key, value in table.items():
        if key in _OTHER_COMPONENTS and isinstance(value, dict):
            continue
        if key == "select":
            updates["select"] = check_selectors(_str_list(path, key, value), f"{path}: '{key}'")
        elif key == "extend-select":
            updates["extend_select"] = check_selectors(_str_list(path, key, value), f"{path}: '{key}'")
        elif key == "ignore":
            updates["ignore"] = check_selectors(_str_list(path, key, value), f"{path}: '{key}'")
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: 'per-file-ignores' must be a table of pattern = [codes], got {_type_name(value)}")
            pfi = []
            for pattern, codes in value.items():
                sel = check_selectors(_str_list(path, f"per-file-ignores.{pattern}", codes),
                                      f"{path}: 'per-file-ignores.{pattern}'")
                pfi.append((pattern, sel))
            updates["per_file_ignores"] = tuple(pfi)
        elif key == "exclude":
            updates["exclude"] = _str_list(path, key, value)
        elif key == "extend-exclude":
            updates["extend_exclude"] = _str_list(path, key, value)
        elif key == "severity":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: 'severity' must be a table of CODE = \"error\"|\"warning\"|\"info\", got {_type_name(value)}")
            sev: dict[str, Severity] = {}
            codes = known_codes()
            for code, level in value.items():
                if code not in codes:
                    raise ConfigError(f"{path}: 'severity': unknown rule code {code!r}")
                try:
                    sev[code] = Severity(level)
                except ValueError:
                    raise ConfigError(f"{path}: 'severity.{code}' must be \"error\", \"warning\" or \"info\", got {level!r}") from None
            updates["severity"] = sev
        elif key == "max-file-size":
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{path}: 'max-file-size' must be a positive integer (bytes), got {value!r}")
            updates["max_file_size"] = value
        elif key == "respect-gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: 'respect-gitignore' must be true or false, got {value!r}")
            updates["respect_gitignore"] = value
        elif key == "cache-dir":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{path}: 'cache-dir' must be a non-empty string, got {_type_name(value)}")
            updates["cache_dir"] = value
        elif key == "confidence":
            if value not in CONFIDENCE_LEVELS:
                raise ConfigError(f"{path}: 'confidence' must be \"certain\" or \"all\", got {value!r}")
            updates["confidence"] = value
        elif key == "collective-functions":
            analysis = replace(analysis, collective_functions=_names(path, key, value))
        elif key == "benign-functions":
            analysis = replace(analysis, benign_functions=_names(path, key, value))
        elif key == "process-dependent-sources":
            analysis = replace(analysis, process_dependent_sources=_names(path, key, value))
        elif key == "sanitizers":
            analysis = replace(analysis, sanitizers=_names(path, key, value))
        elif key == "assume-unknown-calls-collective":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: 'assume-unknown-calls-collective' must be true or false, got {value!r}")
            analysis = replace(analysis, assume_unknown_calls_collective=value)
        elif key == "library-summaries":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: 'library-summaries' must be true or false, got {value!r}")
            analysis = replace(analysis, library_summaries=value)
        elif key == "library-paths":
            base = path.parent
            analysis = replace(analysis, library_paths=tuple(str((base / p).resolve()) for p in _str_list(path, key, value)))
        else:
            raise unknown_key_error(path, key, "tool.mcjax", KNOWN_KEYS)
    return replace(cfg, analysis=analysis, **updates)


KNOWN_KEYS = (
    "select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude", "severity",
    "max-file-size", "respect-gitignore", "cache-dir", "collective-functions", "benign-functions",
    "process-dependent-sources", "sanitizers", "assume-unknown-calls-collective", "confidence",
    "library-summaries", "library-paths",
)
CONFIDENCE_LEVELS = ("certain", "all")


def unknown_key_error(path: Path, key: str, table: str, known: Iterable[str]) -> ConfigError:
    """One line for a key nobody reads in `[table]`, with the closest known key as a hint (the
    guard's and the pytest plugin's tables report theirs the same way)."""
    import difflib

    got = difflib.get_close_matches(key.replace("_", "-"), list(known), n=1)
    return ConfigError(f"{path}: unknown key '{key}' in [{table}]" + (f" (did you mean '{got[0]}'?)" if got else ""))


def type_name(v: Any) -> str:
    """`a string`, `an integer`, ... for "must be X, got Y" messages."""
    return _type_name(v)


def load_config(config_file: Path | None, start: Path) -> LintConfig:
    """Load `config_file`, or discover pyproject.toml from `start` upwards.

    The project root is the config file's directory, else the nearest directory with a
    pyproject.toml or .git, else None (then only the given files form the project)."""
    from mcjax_lint.files import find_project_root

    if config_file is not None:
        if not config_file.is_file():
            raise ConfigError(f"{config_file}: configuration file not found")
        path = config_file.resolve()
        cfg = parse_table(_table_from_file(path), path)
        root = path.parent
    else:
        path = find_config_file(start)
        if path is not None:
            cfg = parse_table(_table_from_file(path), path)
            root = path.parent
        else:
            cfg = LintConfig()
            root = find_project_root(start)
    return replace(cfg, project_root=root, config_path=path)
