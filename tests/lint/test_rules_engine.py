"""Engine contracts the tooling relies on: the prefilter never hides a finding, summaries survive
JSON, fixes apply cleanly and silence their finding, user declarations work, module names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcjax_lint import engine
from mcjax_lint.errors import AnalysisError
from mcjax_lint.modnames import module_name, module_names
from mcjax_lint.settings import AnalysisSettings
from test_fixtures import _project, analysed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _project_paths() -> list[Path]:
    return [p for kind in ("hazards", "benign") for p in sorted((FIXTURES / "lint" / kind).iterdir())
            if p.suffix == ".py" or (p.is_dir() and any(p.rglob("*.py")))]


PROJECT_PATHS = _project_paths()
PROJECTS = [_project(p) for p in PROJECT_PATHS]


def _all_findings(files: dict[str, str], settings=AnalysisSettings()):
    """The pipeline without the prefilter: every file through the libcst pass."""
    names = module_names(files)
    summaries = [engine.summarize(s, p, names[p]) for p, s in files.items()]
    index = engine.build_index(summaries, settings)
    out = []
    for p, s in files.items():
        out.extend(engine.analyze(s, p, names[p], index, settings))
    return sorted((f.path, f.line, f.code) for f in out)


def test_prefilter_never_hides_a_finding():
    for path in PROJECT_PATHS:
        files, findings, errors = analysed(path)  # the pipeline's run test_fixtures.py checks too
        assert errors == ()
        assert sorted((f.path, f.line, f.code) for f in findings) == _all_findings(files), sorted(files)


def test_summaries_round_trip_through_json():
    for files in PROJECTS:
        names = module_names(files)
        for p, s in files.items():
            summary = engine.summarize(s, p, names[p])
            again = engine.ModuleSummary.from_dict(json.loads(json.dumps(summary.to_dict())))
            assert again == summary
            # An index built from round-tripped summaries gives the same findings.
    files = PROJECTS[0]
    names = module_names(files)
    sums = [engine.ModuleSummary.from_dict(json.loads(json.dumps(engine.summarize(s, p, names[p]).to_dict())))
            for p, s in files.items()]
    index = engine.build_index(sums)
    got = sorted((f.line, f.code) for p, s in files.items() for f in engine.analyze(s, p, names[p], index))
    assert got == sorted((f.line, f.code) for f in engine.analyze_project(files)[0])


def test_stale_summary_versions_are_rejected():
    d = engine.summarize("x = 1\n", "m.py", "m").to_dict()
    d["version"] = -1
    with pytest.raises(ValueError):
        engine.ModuleSummary.from_dict(d)


def _apply(source: str, edits) -> str:
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln))
    out = source
    for e in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        start = offsets[e.line - 1] + e.column
        end = offsets[e.end_line - 1] + e.end_column
        out = out[:start] + e.replacement + out[end:]
    return out


def test_fixes_apply_cleanly_and_silence_their_finding():
    fixed = 0
    for files in PROJECTS:
        findings, _ = engine.analyze_project(files)
        for f in findings:
            if f.fix is None:
                continue
            new = dict(files)
            new[f.path] = _apply(files[f.path], f.fix.edits)
            after, errors = engine.analyze_project(new)
            assert errors == [], errors
            assert (f.path, f.line, f.code) not in {(g.path, g.line, g.code) for g in after}, (f, new[f.path])
            fixed += 1
    assert fixed >= 5


def test_declared_process_dependent_source_and_collective():
    src = (
        "from mylib.dist import is_main_process\n"
        "from mylib.ckpt import save_all\n"
        "def step(state):\n"
        "    if is_main_process():\n"
        "        save_all(state)\n"
    )
    assert engine.analyze_project({"t.py": src})[0] == []  # unknown library calls: not assumed
    settings = AnalysisSettings(process_dependent_sources=("mylib.dist.is_main_process",),
                                collective_functions=("mylib.ckpt.*",))
    findings, _ = engine.analyze_project({"t.py": src}, settings)
    assert [(f.line, f.code) for f in findings] == [(4, "MCJ101")]
    assert "is_main_process" in findings[0].message and "save_all" in findings[0].message
    unknown = AnalysisSettings(process_dependent_sources=("mylib.dist.is_main_process",),
                               assume_unknown_calls_collective=True)
    assert [(f.line, f.code) for f in engine.analyze_project({"t.py": src}, unknown)[0]] == [(4, "MCJ101")]


def test_declared_benign_function_and_sanitizer():
    src = (
        "import jax\n"
        "from jax.experimental import multihost_utils\n"
        "from mylib import agree\n"
        "def step(state):\n"
        "    flag = agree(jax.process_index() == 0)\n"
        "    if flag:\n"
        "        multihost_utils.sync_global_devices('x')\n"
        "    if jax.process_index() == 0:\n"
        "        multihost_utils.sync_global_devices('y')\n"
    )
    findings, _ = engine.analyze_project({"t.py": src})
    assert {(f.line, f.code) for f in findings} == {(6, "MCJ101"), (8, "MCJ101")}
    sanitized = AnalysisSettings(sanitizers=("mylib.agree",))
    assert [(f.line, f.code) for f in engine.analyze_project({"t.py": src}, sanitized)[0]] == [(8, "MCJ101")]
    benign = AnalysisSettings(sanitizers=("mylib.agree",),
                              benign_functions=("jax.experimental.multihost_utils.sync_global_devices",))
    assert engine.analyze_project({"t.py": src}, benign)[0] == []


def test_findings_do_not_depend_on_file_order():
    for path in PROJECT_PATHS:
        files, a, _ = analysed(path)
        if len(files) > 1:
            b = engine.analyze_project(dict(reversed(list(files.items()))))[0]
            assert list(a) == b


def test_module_names(tmp_path):
    pkg = tmp_path / "pkg" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("")
    (tmp_path / "script.py").write_text("")
    assert module_name(str(pkg / "mod.py")) == "pkg.sub.mod"
    assert module_name(str(pkg / "__init__.py")) == "pkg.sub"
    assert module_name(str(tmp_path / "script.py")) == "script"
    # In-memory projects: packages are formed by the given paths.
    assert module_names(["a/__init__.py", "a/b.py", "c.py"]) == {"a/__init__.py": "a", "a/b.py": "a.b", "c.py": "c"}


def test_unparsable_sources_raise_analysis_error():
    with pytest.raises(AnalysisError) as e:
        engine.summarize("def f(:\n", "bad.py", "bad")
    assert e.value.path == "bad.py" and e.value.line == 1
    index = engine.build_index([])
    with pytest.raises(AnalysisError):
        engine.analyze("class (\n", "bad.py", "bad", index)
    deep = "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    findings, errors = engine.analyze_project({"deep.py": deep, "ok.py": "y = 2\n"})
    assert findings == [] and [e.path for e in errors] == ["deep.py"]


_DIGEST = """
import hashlib, json, sys
from pathlib import Path
from mcjax_lint.engine import analyze_project
root = Path(sys.argv[1])
out = []
for p in sorted((root / "lint" / "hazards").iterdir()):
    files = [p] if p.suffix == ".py" else sorted(p.rglob("*.py"))
    if files:
        items = [(str(f), f.read_text()) for f in files]
        out.append([f.to_dict() for f in analyze_project(dict(reversed(items)))[0]])
print(hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest())
"""


def test_findings_do_not_depend_on_hash_seed():
    """Set iteration order in the analysis itself must not leak into findings or messages."""
    import os
    import subprocess
    import sys

    digests = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, "-c", _DIGEST, str(FIXTURES)], env=env, capture_output=True,
                           text=True, timeout=120, check=True)
        digests.add(r.stdout.strip())
    assert len(digests) == 1


def test_pickled_index_gives_the_same_findings():
    """The tooling ships the index to workers and caches it: the compact pickled form must
    answer exactly like the original."""
    import pickle

    for files in PROJECTS:
        names = module_names(files)
        sums = [engine.summarize(s, p, names[p]) for p, s in files.items()]
        index = engine.build_index(sums)
        again = pickle.loads(pickle.dumps(index))
        for summary in sums:
            assert engine.needs_full_analysis(summary, index) == engine.needs_full_analysis(summary, again)
        for p, s in files.items():
            assert [f.to_dict() for f in engine.analyze(s, p, names[p], index)] == \
                   [f.to_dict() for f in engine.analyze(s, p, names[p], again)], p
