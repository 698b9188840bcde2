"""Analysis settings: what the user declares on top of the built-in knowledge.

Filled from `[tool.mcjax]` by the configuration loader; read by the analysis. Names are dotted
qualified names as they would be imported (`mypkg.dist.is_main_process`, `orbax.checkpoint.
CheckpointManager.save`); a trailing `.*` matches every attribute under a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AnalysisSettings:
    # Functions/methods that communicate across processes (in addition to the built-in list).
    collective_functions: tuple[str, ...] = ()
    # Functions/methods known to do no cross-process work (override the built-in or inferred).
    benign_functions: tuple[str, ...] = ()
    # Calls/attributes whose value differs between processes (e.g. a project's `is_main_process`).
    process_dependent_sources: tuple[str, ...] = ()
    # Calls whose result agrees across processes again (e.g. a project's own broadcast helper).
    sanitizers: tuple[str, ...] = ()
    # When a call target cannot be resolved, assume it does no collective work (the default,
    # for low noise). Set True to assume unknown calls may be collective.
    assume_unknown_calls_collective: bool = False
    # Functions a guarded run saw doing cross-process work, with where that was seen (each is
    # also in `collective_functions`; see mcjax_lint/observed.py): (qualified name, provenance).
    observed_functions: tuple[tuple[str, str], ...] = ()
    # Read the source of installed libraries the project uses (mcjax_lint/libraries.py): their
    # functions' facts are computed like the project's. Off: only the built-in tables.
    library_summaries: bool = True
    # More directories to find libraries in, before `sys.path` (absolute, or relative to the
    # project root as the configuration gives them).
    library_paths: tuple[str, ...] = ()
