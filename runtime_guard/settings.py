"""Guard settings: one object, passed from `mcjax-guard` to every guarded process via one env var.

Every process must run with the same settings (checked at start-up, see `exchange.check_agreement`);
`agreement_fields()` lists the ones that must match.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

ENV = "MCJAX_GUARD_SETTINGS"
MODES = ("fast", "strict")


@dataclass(frozen=True)
class GuardSettings:
    mode: str = "fast"
    report_dir: str = ""  # "" = do not write files (in-code install without a directory)
    # Private directory shared with the supervisor (per-process state, verdict, fallback stacks).
    state_dir: str = ""
    # Hang detection: seconds without progress anywhere. 0 = learn from observed step times.
    timeout: float = 0.0
    # Floor for the learned hang threshold, and the factor applied to observed step times.
    min_learned_timeout: float = 20.0
    learned_factor: float = 10.0
    # A process whose heartbeat stops for this long is reported dead (across hosts; with -n the
    # supervisor sees deaths directly). A process that holds the GIL in one C call for longer looks
    # dead: raise it for such programs.
    died_after: float = 4.0
    # How often the background thread publishes and compares (seconds). Each round costs the
    # process ~0.3-0.6 ms of CPU (a state write, and on process 0 the comparison): at 0.1 s that
    # was 1.3% of a core on the GPU machine's training loop, at 0.25 s 0.65%, while a divergence
    # is still reported well within the 2 s goal (docs/benchmarks.md).
    interval: float = 0.25
    # What a guarded process does in fast mode once a divergence/exit/death verdict is known
    # (strict mode always raises DivergenceError in the main thread instead):
    # "exit" (write the report, then leave with EXIT_DETECTED: the only way out of a hang),
    # "report" (write and print only).
    on_detect: str = "exit"
    # Stop the process group from the supervisor on detection (mcjax-guard only).
    kill: bool = True
    # Run signature checks on every call instead of trusting the C++ cache (fast mode).
    exact: bool = False
    # Frames from these path fragments are not call sites (first frame outside them is).
    skip_frames: tuple[str, ...] = ("/jax/", "/jaxlib/", "/runtime_guard/guard.py", "/runtime_guard/compat.py",
                                    "/runtime_guard/bootstrap.py", "/flax/", "/optax/", "/orbax/", "<frozen ")
    quiet: bool = False
    # Compare a digest of host data declared replicated over every process (given to
    # jax.make_array_from_process_local_data / make_array_from_callback with a fully replicated
    # sharding): off by default, it hashes the data (~1 GB/s). MCJAX_CHECK_REPLICATED=1 turns it on.
    check_replicated: bool = field(default_factory=lambda: os.environ.get("MCJAX_CHECK_REPLICATED") == "1")

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {self.mode!r}")
        if self.on_detect not in ("exit", "report"):
            raise ValueError(f"on_detect must be exit or report, not {self.on_detect!r}")

    def to_env(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "GuardSettings":
        raw = (environ if environ is not None else os.environ).get(ENV)
        if not raw:
            return cls()
        data = json.loads(raw)
        known = {f.name for f in fields(cls)}
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in known}
        return cls(**kw)

    def agreement_fields(self) -> dict[str, object]:
        """Settings that change what processes exchange: they must be identical everywhere."""
        return {"mode": self.mode, "exact": self.exact, "timeout": self.timeout, "interval": self.interval,
                "on_detect": self.on_detect, "check_replicated": self.check_replicated}


# Exit status of a guarded process that stops itself on a detection, and of mcjax-guard.
EXIT_DETECTED = 87


# --- [tool.mcjax.guard] / [tool.mcjax.pytest] in pyproject.toml --------------------------------
# key -> (destination, kind). Keys are the long options' names; the command line wins over them.
GUARD_TABLE: dict[str, tuple[str, str]] = {
    "mode": ("mode", "mode"), "devices-per-process": ("devices_per_process", "count"),
    "report-dir": ("report_dir", "str"), "timeout": ("timeout", "seconds"),
    "died-after": ("died_after", "seconds"), "collective-timeout": ("collective_timeout", "seconds"),
    "exact": ("exact", "bool"), "kill": ("kill", "bool"), "native": ("native", "bool"),
    "locals": ("locals", "bool"), "keep-hash-seed": ("keep_hash_seed", "bool"), "quiet": ("quiet", "bool"),
}
# The defaults of @pytest.mark.mcjax (a mark's own arguments and the --mcjax-* options win).
PYTEST_TABLE: dict[str, tuple[str, str]] = {
    "processes": ("processes", "count"), "devices-per-process": ("devices_per_process", "count"),
    "mode": ("mode", "mode"), "timeout": ("timeout", "seconds"),
}


def project_settings(component: str, spec: dict[str, tuple[str, str]], start: Path | None = None) -> dict[str, Any]:
    """The validated `[tool.mcjax.<component>]` table of the nearest pyproject.toml with a
    `[tool.mcjax]` table at or above `start` (the working directory), as {destination: value}.
    Problems raise mcjax_lint's ConfigError, one line naming the file and the key, as the
    linter's own table does."""
    from mcjax_lint.config import ConfigError, project_table, type_name, unknown_key_error

    path, table = project_table(Path.cwd() if start is None else start)
    if path is None or component not in table:
        return {}
    where = f"tool.mcjax.{component}"
    sub = table[component]
    if not isinstance(sub, dict):
        raise ConfigError(f"{path}: [{where}] must be a table, got {type_name(sub)}")
    out: dict[str, Any] = {}
    for key, value in sub.items():
        if key not in spec:
            raise unknown_key_error(path, key, where, spec)
        dest, kind = spec[key]
        ok = {"mode": isinstance(value, str) and value in MODES,
              "count": isinstance(value, int) and not isinstance(value, bool) and value >= 1,
              "seconds": isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0,
              "bool": isinstance(value, bool),
              "str": isinstance(value, str) and bool(value)}[kind]
        if not ok:
            want = {"mode": " or ".join(f'"{m}"' for m in MODES), "count": "a positive integer",
                    "seconds": "a number of seconds (0 or more)", "bool": "true or false",
                    "str": "a non-empty string"}[kind]
            raise ConfigError(f"{path}: '{key}' in [{where}] must be {want}, got {value!r}")
        out[dest] = float(value) if kind == "seconds" else value
    return out
