"""Guard settings: one object, passed from `mcjax-guard` to every guarded process via one env var.

Every process must run with the same settings (checked at start-up, see `exchange.check_agreement`);
`agreement_fields()` lists the ones that must match.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields

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
                "on_detect": self.on_detect}


# Exit status of a guarded process that stops itself on a detection, and of mcjax-guard.
EXIT_DETECTED = 87
