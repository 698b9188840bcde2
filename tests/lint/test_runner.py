"""The parallel, cached runner gives exactly the engine's reference results
(`engine.analyze_project`): serial or parallel, cold or warm, whole project or one file."""

from __future__ import annotations

import json
import pickle
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import demo_project

from mcjax_lint import engine
from mcjax_lint.config import load_config
from mcjax_lint.files import Excluder, discover
from mcjax_lint.modnames import module_names
from mcjax_lint.runner import lint_files

REPO = Path(__file__).resolve().parents[2]

# Building blocks of a generated project: helpers that return process-dependent values or do
# collective work, defined in one module and used in others (aliases, methods, sets, listdir).
_HELPERS = [
    "def {name}():\n    return jax.process_index() == {k}\n",
    "def {name}():\n    return socket.gethostname()\n",
    "def {name}(x):\n    return multihost_utils.process_allgather(x)\n",
    "def {name}(x):\n    multihost_utils.sync_global_devices('{name}')\n    return x\n",
    "def {name}(xs):\n    return sorted(set(xs))\n",
    "def {name}(d):\n    return os.listdir(d)\n",
    "class {cap}:\n    def __init__(self):\n        self.is_primary = jax.process_index() == 0\n\n"
    "    def save(self, x):\n        return multihost_utils.broadcast_one_to_all(x)\n",
]
_USES = [
    "def use_{i}(x):\n    if {h}():\n        x = {c}(x)\n    return x\n",
    "def use_{i}(xs):\n    for v in set(xs):\n        {c}(v)\n",
    "def use_{i}(d):\n    for f in {l}(d):\n        {c}(f)\n",
    "def use_{i}(x):\n    flag = {h}()\n    while flag:\n        x = {c}(x)\n        flag = False\n    return x\n",
    "def use_{i}(x):\n    if {h}():\n        print(x)\n    return {c}(x)\n",
    "def use_{i}(x):\n    obj = {cls}()\n    if obj.is_primary:\n        obj.save(x)\n    return x\n",
    "def use_{i}(x):\n    try:\n        x = {c}(x)\n    except ValueError:\n        return None\n    return x\n",
]


def generate_project(root: Path, n_modules: int = 12, seed: int = 0) -> None:
    rng = random.Random(seed)
    pkg = root / "gen"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'gen'\nversion = '0'\n")
    (pkg / "__init__.py").write_text("")
    header = "import os\nimport socket\n\nimport jax\nfrom jax.experimental import multihost_utils\n"
    defined: list[tuple[str, str, str]] = []  # (module, name, kind)
    for m in range(n_modules):
        lines = [header]
        imports = []
        for j in range(rng.randint(1, 3)):
            t = rng.randrange(len(_HELPERS))
            name = f"h{m}_{j}"
            lines.append(_HELPERS[t].format(name=name, k=rng.randint(0, 1), cap=f"C{m}{j}"))
            kind = ["pd", "pd", "coll", "coll", "order", "ls", "cls"][t]
            defined.append((f"gen.m{m}", f"C{m}{j}" if kind == "cls" else name, kind))
        if m:
            for i in range(rng.randint(1, 4)):
                def pick(kind: str, fallback: str) -> str:
                    c = [d for d in defined if d[2] == kind and d[0] != f"gen.m{m}"]
                    if not c:
                        return fallback
                    mod, name, _ = rng.choice(c)
                    alias = f"{name}_a{i}"
                    imports.append(f"from {mod} import {name} as {alias}\n")
                    return alias
                use = rng.choice(_USES).format(
                    i=i, h=pick("pd", "jax.process_index"), c=pick("coll", "multihost_utils.process_allgather"),
                    l=pick("ls", "os.listdir"), cls=pick("cls", "object"))
                lines.append(use)
        (pkg / f"m{m}.py").write_text(lines[0] + "".join(imports) + "\n\n" + "\n\n".join(lines[1:]))
    (pkg / "broken.py").write_text("def f(:\n")


def _reference(root: Path) -> tuple[list, list]:
    """The engine's serial pipeline over every file of `root`, keyed as the runner keys them."""
    files = sorted(p for p in root.rglob("*.py") if ".mcjax_cache" not in p.parts)
    sources = {p.relative_to(root).as_posix(): p.read_text() for p in files}
    # The runner names modules together (two files with one name are told apart by their
    # directories), so the reference does too.
    names = module_names([str(p) for p in files])
    modules = {p.relative_to(root).as_posix(): names[str(p)] for p in files}
    return engine.analyze_project(sources, load_config(None, root).analysis, modules)


def _run(root: Path, jobs: int, cache: bool, targets: list[Path] | None = None, cwd: Path | None = None):
    cfg = load_config(None, root)
    excl = Excluder(root.resolve(), cfg.all_excludes)
    project = discover([root], excl)
    res = lint_files(targets or project, project, cfg, jobs=jobs, use_cache=cache, cwd=cwd or root)
    raw = sorted((f for fs in res.raw.values() for f in fs), key=lambda f: (f.path, f.line, f.column, f.code))
    return raw, sorted(e.path for e in res.file_errors), res


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen")
    generate_project(root, n_modules=14, seed=3)
    return root


def _same(raw, errors, ref):
    ref_findings, ref_errors = ref
    assert raw == ref_findings
    assert errors == sorted(e.path for e in ref_errors)


def test_generated_project_has_findings_and_an_error(generated):
    ref = _reference(generated)
    assert len({f.path for f in ref[0]}) >= 3, "the generated project should exercise cross-module findings"
    assert [e.path for e in ref[1]] == ["gen/broken.py"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_cold_warm_serial_parallel_equal_reference(generated, jobs):
    shutil.rmtree(generated / ".mcjax_cache", ignore_errors=True)
    ref = _reference(generated)
    raw, errors, res = _run(generated, jobs, cache=True)
    _same(raw, errors, ref)
    assert res.stats.summarized == res.stats.files  # cold
    raw, errors, res = _run(generated, jobs, cache=True)
    _same(raw, errors, ref)
    assert res.stats.summarized == 0 and res.stats.analyzed == 0  # warm: nothing recomputed
    raw, errors, _ = _run(generated, jobs, cache=False)
    _same(raw, errors, ref)


def test_fixtures_equal_reference(tmp_path):
    """Two forked workers (the CLI in its own process: inside pytest JAX's threads make the
    runner stay serial) find exactly what the serial engine finds."""
    fixtures = REPO / "fixtures" / "lint"
    if not any(fixtures.rglob("*.py")):
        pytest.skip("no lint fixtures yet")
    root = tmp_path / "proj"
    shutil.copytree(fixtures, root)
    (root / "pyproject.toml").write_text("[tool.mcjax]\n")
    ref_f, ref_e = _reference(root)
    out = subprocess.run(
        [sys.executable, "-m", "mcjax_lint", ".", "--format", "json", "--no-cache", "-j", "2", "--exit-zero"],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
    )
    assert out.returncode in (0, 2), out.stderr
    got = sorted((d["path"], d["line"], d["column"], d["code"], d["message"]) for d in json.loads(out.stdout))
    assert got == sorted((f.path, f.line, f.column, f.code, f.message) for f in ref_f)
    broken = {e.path for e in ref_e}
    assert (out.returncode == 2) == bool(broken)


def test_one_file_like_precommit_equals_whole_project(generated):
    shutil.rmtree(generated / ".mcjax_cache", ignore_errors=True)
    raw_all, _, _ = _run(generated, 2, cache=True)
    for m in ("m3", "m7", "m11"):
        target = (generated / "gen" / f"{m}.py").resolve()
        for cache in (True, False):
            raw, _, _ = _run(generated, 1, cache=cache, targets=[target])
            assert raw == [f for f in raw_all if f.path == f"gen/{m}.py"]


def test_changed_helper_invalidates_dependents(tmp_path):
    root = demo_project(tmp_path)
    util = root / "pkg" / "util.py"
    raw, _, _ = _run(root, 1, cache=True)
    assert any(f.path == "pkg/ckpt.py" and f.code == "MCJ101" for f in raw)
    # The helper stops being process-dependent: the dependent's finding must go, warm or not.
    util.write_text("import jax\n\n\ndef is_main():\n    return True\n")
    raw, _, res = _run(root, 1, cache=True)
    assert not any(f.path == "pkg/ckpt.py" and f.code == "MCJ101" for f in raw)
    assert res.stats.summarized == 1
    _same(raw, [], _reference(root))
    # ...and back.
    util.write_text("import jax\n\n\ndef is_main():\n    return jax.process_index() == 0\n")
    raw, _, _ = _run(root, 1, cache=True)
    assert any(f.path == "pkg/ckpt.py" and f.code == "MCJ101" for f in raw)
    _same(raw, [], _reference(root))


def test_working_directory_does_not_change_results(generated, monkeypatch):
    raw_root, _, _ = _run(generated, 1, cache=True)
    monkeypatch.chdir(generated / "gen")
    raw_sub, _, _ = _run(generated, 1, cache=True, cwd=Path.cwd())
    assert raw_sub == raw_root  # engine paths are project-relative
    assert os.getcwd() == str(generated / "gen")


def test_index_solved_in_another_process_answers_the_same(generated):
    """The precise pass's workers are forked before the index's fixpoint (runner._Ahead) and
    install the solved facts (`solved_state`, pickled) in their own unsolved copy, built from
    other summary objects; with a file parsed ahead (`engine.parse`, its positions found then
    too: `runner._parse_ahead`), every prefilter answer and finding is the solved index's own."""
    files = sorted(p for p in generated.rglob("*.py") if p.name != "broken.py")
    rel = {p: p.relative_to(generated).as_posix() for p in files}
    names = module_names([str(p) for p in files])
    sources = {p: p.read_text() for p in files}
    settings = load_config(None, generated).analysis

    def summaries():
        return [engine.summarize(sources[p], rel[p], names[str(p)]) for p in files]

    mine, theirs = summaries(), summaries()
    solved = engine.build_index(mine, settings)
    copy = engine.build_index(theirs, settings, solve=False)
    copy.adopt_solved(pickle.loads(pickle.dumps(solved.solved_state())))
    with pytest.raises(ValueError):
        solved.adopt_solved({})
    kept = 0
    for p, a, b in zip(files, mine, theirs):
        need = solved.needs_full_analysis(a)
        assert copy.needs_full_analysis(b) == need
        if need:
            kept += 1
            src, path, module = sources[p], rel[p], names[str(p)]
            ahead = engine.parse(src, path)
            if kept % 2:
                ahead[1].ready()  # (as `runner._parse_ahead` does; the others find them when asked)
            assert engine.analyze(src, path, module, copy, settings, parsed=ahead) == \
                engine.analyze(src, path, module, solved, settings)
    assert kept >= 3


def test_positions_found_ahead_are_those_found_when_asked():
    """`Positions.ready` (done beside the index by `runner._parse_ahead`) computes what the first
    question would: every node's range is the same either way."""
    src = "import jax\n\n\ndef f(x, *, y=1):\n    if jax.process_index() == 0:  # c\n        return [x +\n   y]\n    return {'a': (x)}\n"
    lazy, early = engine.parse(src, "m.py"), engine.parse(src, "m.py")
    assert early[1].ready() is early[1]
    assert len(early[1]) == len(lazy[1]) > 20
    for (_, _, a), (_, _, b) in zip(lazy[1]._spans.values(), early[1]._spans.values()):
        assert lazy[1][a] == early[1][b]
