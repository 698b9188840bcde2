"""Rule registry: every rule's stable code, name, severity and one-line summary.

Each rule lives in its own module (`mcjax_lint/rules/mcjNNN_*.py`) as one small libcst visitor;
`RULES` is the catalogue the tooling (select/ignore, docs, SARIF) reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcjax_lint.model import Severity


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str  # kebab-case
    severity: Severity
    summary: str  # one line
    fixable: bool
    family: str


CONTROL_FLOW = "process-dependent control flow"
ORDER = "nondeterministic order"
SHAPES = "process-dependent shapes and pytrees"
INIT = "initialization"

_RULES = [
    RuleInfo("MCJ101", "process-dependent-branch", Severity.ERROR,
             "A process-dependent condition chooses between branches that issue different collective work.",
             False, CONTROL_FLOW),
    RuleInfo("MCJ102", "process-dependent-early-exit", Severity.ERROR,
             "A return/break/continue/raise/exit under a process-dependent condition skips collective work that follows.",
             False, CONTROL_FLOW),
    RuleInfo("MCJ103", "process-local-loop", Severity.ERROR,
             "A loop over process-local data, or with a process-dependent exit condition, does collective work in its body.",
             False, CONTROL_FLOW),
    RuleInfo("MCJ104", "one-process-exception", Severity.WARNING,
             "An exception that can happen on one process only is swallowed around collective work, or reaches collective work in `finally`/`__exit__`.",
             False, CONTROL_FLOW),
    RuleInfo("MCJ201", "set-iteration-order", Severity.ERROR,
             "The iteration order of a set reaches collective work or a value that must agree across processes.",
             True, ORDER),
    RuleInfo("MCJ202", "filesystem-order", Severity.ERROR,
             "The order of a directory listing or glob reaches collective work or a per-process partition.",
             True, ORDER),
    RuleInfo("MCJ203", "string-hash", Severity.ERROR,
             "`hash()` of a string (randomized per process by PYTHONHASHSEED) reaches collective work, a shape, a seed or a branch.",
             False, ORDER),
    RuleInfo("MCJ301", "process-dependent-shape", Severity.ERROR,
             "A shape or dtype computed from a process-dependent value is passed into a global array or collective.",
             False, SHAPES),
    RuleInfo("MCJ302", "process-dependent-pytree", Severity.ERROR,
             "A pytree whose structure differs between processes (None on some, process-dependent keys) is passed into a collective.",
             False, SHAPES),
    RuleInfo("MCJ401", "initialize-after-device-access", Severity.ERROR,
             "`jax.distributed.initialize()` runs after JAX devices were already accessed.",
             False, INIT),
]

RULES: dict[str, RuleInfo] = {r.code: r for r in _RULES}


def visitor_classes() -> list[type]:
    """The rule visitors, one per code (imported lazily: they depend on the analysis)."""
    from mcjax_lint.rules.mcj101_branch import ProcessDependentBranch
    from mcjax_lint.rules.mcj102_early_exit import ProcessDependentEarlyExit
    from mcjax_lint.rules.mcj103_local_loop import ProcessLocalLoop
    from mcjax_lint.rules.mcj104_exception import OneProcessException
    from mcjax_lint.rules.mcj201_set_order import SetIterationOrder
    from mcjax_lint.rules.mcj202_fs_order import FilesystemOrder
    from mcjax_lint.rules.mcj203_string_hash import StringHash
    from mcjax_lint.rules.mcj301_shape import ProcessDependentShape
    from mcjax_lint.rules.mcj302_pytree import ProcessDependentPytree
    from mcjax_lint.rules.mcj401_initialize import InitializeAfterDeviceAccess

    return [ProcessDependentBranch, ProcessDependentEarlyExit, ProcessLocalLoop, OneProcessException,
            SetIterationOrder, FilesystemOrder, StringHash, ProcessDependentShape, ProcessDependentPytree,
            InitializeAfterDeviceAccess]
