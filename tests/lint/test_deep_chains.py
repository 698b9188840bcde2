"""MCJ101 through long chains of helpers: found at any depth, or reported as not followed.

The call-graph fixpoint solves callees before callers, so an acyclic chain settles in one round
however deep it is and whichever way its names sort. Where the fixpoint does stop early (its
round cap), the command line says which functions were not followed instead of dropping them.
"""

from __future__ import annotations

import pytest

from mcjax_lint import cli, engine
from mcjax_lint.analysis import index as index_mod


def chain_program(depth: int, callers_sort_first: bool) -> str:
    """`enter()` → … → the last helper, which waits at a barrier; process 0 alone enters."""
    names = [f"stage_{i:03d}" for i in range(1, depth + 1)]
    if not callers_sort_first:
        names.reverse()  # stage_050 calls stage_049 ... stage_001
    lines = ["import jax", "from jax.experimental import multihost_utils", ""]
    for i, n in enumerate(names):
        lines.append(f"def {n}(x):")
        if i + 1 < len(names):
            lines.append(f"    return {names[i + 1]}(x) + 1")
        else:
            lines += ["    multihost_utils.sync_global_devices('deep')", "    return x"]
        lines.append("")
    lines += ["def enter(x):", "    if jax.process_index() == 0:", f"        x = {names[0]}(x)", "    return x", ""]
    return "\n".join(lines)


@pytest.mark.parametrize("depth", [5, 50, 200])
@pytest.mark.parametrize("callers_sort_first", [True, False], ids=["callers-first", "callees-first"])
def test_MCJ101_chain_found_at_any_depth(depth, callers_sort_first):
    src = chain_program(depth, callers_sort_first)
    findings, errors = engine.analyze_project({"chain.py": src})
    assert not errors
    codes = [(f.code, f.line) for f in findings]
    branch_line = src.splitlines().index("    if jax.process_index() == 0:") + 1
    assert codes == [("MCJ101", branch_line)]
    assert "sync_global_devices" in findings[0].message


def test_MCJ101_chain_settles_in_few_rounds():
    """A structural check of the work, not a timing: the rounds do not grow with the depth."""
    rounds = []
    for depth in (5, 50, 200):
        src = chain_program(depth, callers_sort_first=True)
        idx = engine.build_index([engine.summarize(src, "chain.py", "chain")])
        assert idx.converged and not idx.unsettled
        rounds.append(idx.iterations)
    assert rounds[0] == rounds[1] == rounds[2] <= 3


def test_MCJ101_chain_cut_off_is_reported(tmp_path, monkeypatch, capsys):
    """With the fixpoint's round cap at 1 the facts cannot settle: the run says so on stderr."""
    monkeypatch.setattr(index_mod, "MAX_ITERATIONS", 1)
    (tmp_path / "chain.py").write_text(chain_program(50, callers_sort_first=True))
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax]\n")
    status = cli.main(["--no-cache", str(tmp_path / "chain.py")])
    err = capsys.readouterr().err
    assert "mcjax-lint: warning:" in err and "did not settle within 1 rounds" in err
    assert "was not followed" in err
    assert status in (0, 1)


def test_settled_run_prints_no_warning(tmp_path, capsys):
    (tmp_path / "chain.py").write_text(chain_program(50, callers_sort_first=True))
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax]\n")
    assert cli.main(["--no-cache", str(tmp_path / "chain.py")]) == 1
    assert "warning" not in capsys.readouterr().err


def test_MCJ101_import_through_a_file_named_like_its_directory():
    """`byol/configs/byol.py` named `byol.configs.byol`: an unresolved `byol.x` import maps to
    `byol.configs.byol.x` by the path's tail, which starts with `byol` again. Following that
    forever was a RecursionError that lost the whole project; now the name stays unresolved and
    the hazard beside it is still found."""
    main = ("import jax\nfrom jax.experimental import multihost_utils\n"
            "from byol.byol_experiment import Experiment\n\n\n"
            "def train(x):\n    exp = Experiment()\n    if jax.process_index() == 0:\n"
            "        exp.update_pmap(x)\n        multihost_utils.sync_global_devices('saved')\n")
    files = {"byol/configs/byol.py": "def get_config():\n    return {}\n", "byol/main_loop.py": main}
    findings, errors = engine.analyze_project(
        files, modules={"byol/configs/byol.py": "byol.configs.byol", "byol/main_loop.py": "main_loop"})
    assert not errors
    assert [(f.code, f.path, f.line) for f in findings] == [("MCJ101", "byol/main_loop.py", 8)]


def test_flipping_return_value_is_widened_and_settles(monkeypatch):
    """A returned value that flips between two answers from round to round (a cycle of stored
    attributes cut where the solving order first enters it) is joined with what it was after a
    few changes: the fixpoint settles, keeping what either round found. Without the widening the
    same program does not settle."""
    src = "def ping(x):\n    return pong(x)\n\n\ndef pong(x):\n    return ping(x)\n"
    resolve = index_mod.ProjectIndex._resolve
    flip = index_mod.Val(pd=frozenset({index_mod.Src(1, 0, "`flip`", "", origin="loop.py:1")}))
    solved = []

    def flipping(self, sym, path, mark_params=None):
        v = resolve(self, sym, path, mark_params)
        if mark_params is not None and sym.get("via") and sym["via"][0].get("n", "").endswith("pong"):
            solved.append(1)
            v = flip if len(solved) % 2 else index_mod.BOTTOM  # (what the cycle held, then nothing)
        return v

    monkeypatch.setattr(index_mod.ProjectIndex, "_resolve", flipping)
    idx = engine.build_index([engine.summarize(src, "loop.py", "loop")])
    assert idx.converged and not idx.unsettled
    assert idx.returns["loop.ping"].pd == flip.pd
    monkeypatch.setattr(index_mod, "WIDEN_RETURNS_AFTER", 10 ** 6)
    idx = engine.build_index([engine.summarize(src, "loop.py", "loop")])
    assert not idx.converged and "loop.ping" in idx.unsettled
