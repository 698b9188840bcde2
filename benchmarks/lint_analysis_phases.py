"""Where the lint engine spends its time, phase by phase, on real code (CPU seconds).

Runs the serial pipeline on one corpus package (see benchmarks/fetch_corpus.py) and prints CPU
time per phase: stdlib-ast summaries, index (fixpoint), prefilter, then for the files that need
the precise pass: libcst parse, positions (libcst's PositionProvider and the engine's lazy
`lean_positions`, side by side on the same trees), taint analysis, divergence points, rule visitors.

    python benchmarks/lint_analysis_phases.py [--package orbax-checkpoint] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from mcjax_lint import engine  # noqa: E402
from mcjax_lint.analysis.divergence import Divergence  # noqa: E402
from mcjax_lint.analysis.driver import _dispatch, _group  # noqa: E402
from mcjax_lint.analysis.positions import lean_positions  # noqa: E402
from mcjax_lint.analysis.taint import FileAnalysis  # noqa: E402
from mcjax_lint.modnames import module_names  # noqa: E402
from mcjax_lint.rules import visitor_classes  # noqa: E402
from mcjax_lint.rules.base import RuleContext  # noqa: E402
from mcjax_lint.settings import AnalysisSettings  # noqa: E402

T = time.process_time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus")
    ap.add_argument("--package", default="orbax-checkpoint")
    ap.add_argument("--repeat", type=int, default=1, help="repeat the per-file phases, keep the minimum")
    args = ap.parse_args(argv)
    root = args.corpus / args.package
    if not root.is_dir():
        print(f"no {root}: run benchmarks/fetch_corpus.py first", file=sys.stderr)
        return 2
    src = {str(p): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}
    names = module_names(src)
    loc = sum(s.count("\n") for s in src.values())
    t = T()
    sums = {p: engine.summarize(s, p, names[p]) for p, s in src.items()}
    t_sum = T() - t
    t = T()
    index = engine.build_index(sums.values())
    t_idx = T() - t
    t = T()
    todo = [p for p, s in sums.items() if engine.needs_full_analysis(s, index)]
    t_pre = T() - t
    aloc = sum(src[p].count("\n") for p in todo)
    print(f"{args.package}: {len(src)} files, {loc} LOC; {len(todo)} files ({aloc} LOC) need the libcst pass")
    print(f"  summaries (ast)      {t_sum:7.2f} s   {loc / t_sum:9.0f} LOC/s")
    print(f"  index ({index.iterations} rounds)     {t_idx:7.2f} s")
    print(f"  prefilter            {t_pre:7.2f} s")
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        acc = dict.fromkeys(("parse", "PositionProvider", "lean_positions", "taint", "divergence", "rules"), 0.0)
        for p in todo:
            t = T()
            mod = cst.parse_module(src[p])
            acc["parse"] += T() - t
            t = T()
            MetadataWrapper(mod, unsafe_skip_copy=True).resolve(PositionProvider)
            acc["PositionProvider"] += T() - t
            t = T()
            wrapper = MetadataWrapper(mod, unsafe_skip_copy=True)
            pos = lean_positions(wrapper.module)
            acc["lean_positions"] += T() - t
            t = T()
            fa = FileAnalysis(wrapper.module, pos, p, names[p], index, AnalysisSettings(), sums[p].imports)
            fa.seeded_modules = set(sums[p].seeded_rngs)
            fa.run()
            acc["taint"] += T() - t
            t = T()
            div = Divergence(fa).run()
            div.branches_at = _group(div.branches, lambda x: x.node)
            div.exits_at = _group(div.exits, lambda x: x.node)
            div.loops_at = _group(div.loops, lambda x: x.node)
            div.exceptions_at = _group(div.exceptions, lambda x: x.node)
            div.sinks_at = _group(fa.sinks, lambda x: x.node)
            acc["divergence"] += T() - t
            t = T()
            ctx = RuleContext(p, fa, div)
            _dispatch(wrapper, [c(ctx) for c in visitor_classes()], div, fa, bool(sums[p].initialize_line))
            acc["rules"] += T() - t
        for k, v in acc.items():
            best[k] = min(best.get(k, v), v)
    for k, v in best.items():
        print(f"  {k:<20} {v:7.2f} s   {aloc / max(v, 1e-9):9.0f} LOC/s")
    per_file = best["parse"] + best["lean_positions"] + best["taint"] + best["divergence"] + best["rules"]
    print(f"  libcst pass total    {per_file:7.2f} s   {aloc / per_file:9.0f} LOC/s (with the lean provider)")
    print(f"  PositionProvider / lean_positions = {best['PositionProvider'] / best['lean_positions']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
