"""Per-file precise pass: parse with libcst, run the shared analysis, then every rule visitor."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from mcjax_lint.analysis.cst import parse_module
from mcjax_lint.analysis.divergence import Divergence
from mcjax_lint.analysis.index import ProjectIndex
from mcjax_lint.analysis.positions import Positions, lean_positions
from mcjax_lint.analysis.taint import FileAnalysis
from mcjax_lint.errors import AnalysisError
from mcjax_lint.model import Finding, merge_same_location
from mcjax_lint.settings import AnalysisSettings


def _own_summary(source: str, path: str, module: str, index: ProjectIndex):
    s = index.modules.get(module)
    if s is not None and s.path == path:
        return s
    from mcjax_lint.analysis.summary import summarize_source

    return summarize_source(source, path, module)


def _group(items, key) -> dict:
    out: dict = {}
    for it in items:
        out.setdefault(key(it), []).append(it)
    return out


def _dispatch(wrapper: MetadataWrapper, visitors: list, div: Divergence, fa: FileAnalysis, needs_walk: bool) -> None:
    """Run the rule visitors. The rules only report at nodes the shared analysis marked (points
    and sinks), so they are called on those nodes, in source order, rather than on a traversal
    of the whole tree; a rule that needs the traversal itself (`WALKS`) gets one when it can
    fire at all (MCJ401: only in files that call `jax.distributed.initialize()`)."""
    marked = {}
    for table in (div.branches_at, div.exits_at, div.loops_at, div.exceptions_at, div.sinks_at, fa.thread_starts,
                  fa.discarded):
        for node in table:
            marked[id(node)] = node
    for node in fa.conds:  # (every `if` on a process-dependent condition, not only around collectives)
        if isinstance(node, cst.If):
            marked[id(node)] = node
    nodes = sorted(marked.values(), key=fa.pos)
    walkers = []
    for v in visitors:
        if getattr(v, "WALKS", False):
            if needs_walk:
                walkers.append(v)
            continue
        for node in nodes:
            m = getattr(v, f"visit_{type(node).__name__}", None)
            if m is not None:
                m(node)
    if walkers:
        wrapper.visit_batched(walkers)


def parse_source(source: str, path: str) -> tuple[MetadataWrapper, Positions]:
    """The file's libcst tree (in its metadata wrapper) and its nodes' positions: all of the
    precise pass that needs no project index (the runner does it while the index is solved)."""
    mod = parse_module(source, path)
    try:
        wrapper = MetadataWrapper(mod, unsafe_skip_copy=True)
        return wrapper, lean_positions(wrapper.module)
    except RecursionError:
        raise AnalysisError(path, "source nested too deeply to analyse") from None


def analyze_source(source: str, path: str, module: str, index: ProjectIndex, settings: AnalysisSettings,
                   rules: list[type] | None = None, parsed: tuple[MetadataWrapper, Positions] | None = None) -> list[Finding]:
    """The findings of every rule in the catalogue (or of the rule classes `rules`) in one file.
    `parsed`: `parse_source(source, path)`, when it was done before."""
    from mcjax_lint.rules import RULES, visitor_classes
    from mcjax_lint.rules.base import RuleContext

    own = _own_summary(source, path, module, index)
    if index.single_process_script(own):
        return []  # (decided from the summary: a program of one process is not parsed again)
    wrapper, positions = parsed if parsed is not None else parse_source(source, path)
    try:
        fa = FileAnalysis(wrapper.module, positions, path, module, index, settings, own.imports, source)
        fa.seeded_modules = set(own.seeded_rngs)
        fa.run()
        div = Divergence(fa).run()
        div.branches_at = _group(div.branches, lambda p: p.node)
        div.exits_at = _group(div.exits, lambda p: p.node)
        div.loops_at = _group(div.loops, lambda p: p.node)
        div.exceptions_at = _group(div.exceptions, lambda p: p.node)
        div.sinks_at = _group(fa.sinks, lambda s: s.node)
        ctx = RuleContext(path, fa, div)
        gate = index.mode_not_selected(own)
        if gate is not None:
            from mcjax_lint.analysis import evidence
            from mcjax_lint.model import Step
            ctx.program_step = Step(0, evidence.mode_step_text(gate), False, evidence.MODE_NOT_SELECTED)
        visitors = [cls(ctx) for cls in (visitor_classes() if rules is None else rules) if rules is not None or cls.CODE in RULES]
        _dispatch(wrapper, visitors, div, fa, bool(own.initialize_line))
    except RecursionError:
        raise AnalysisError(path, "source nested too deeply to analyse") from None
    out = sorted(merge_same_location(ctx.findings), key=lambda f: (f.line, f.column, f.code))
    # The analysis holds closures over itself (a reference cycle) and, through its fields, the
    # file's whole libcst tree: dropping its fields frees the tree now, by reference counting,
    # instead of leaving it to the cycle collector, whose young-generation passes would walk it
    # (~3% of a cold run). The findings refer to none of it.
    fa.__dict__.clear()
    return out
