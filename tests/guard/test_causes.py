"""From symptom to cause: a guard report names the mcjax-lint findings that explain it, and the
linter learns from a guarded run which library functions do cross-process work.

Real runs: 2 JAX processes under `mcjax-guard -n 2`; the linter runs for real on the files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from runtime_guard.causes import _function_ranges, attach_causes, cause_lines, finish_late
from runtime_guard.report.model import Dispatch, Location, ProcessReport, Report
from runtime_guard.report.render_text import render_text
from runtime_guard.settings import EXIT_DETECTED
from tests.guard.conftest import PROGRAMS, ROOT

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
# These checks are about what is found, not how fast (the 2-core test machine is shared): a budget
# no loaded machine runs out of. The real budget is measured in benchmarks/report_causes.py.
LOADED = 60.0


def expect_line(program: Path, code: str) -> int:
    """The line of the program's `# expect: CODE` marker (the lint fixtures' convention)."""
    hits = [i for i, line in enumerate(program.read_text().splitlines(), 1) if f"# expect: {code}" in line]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.mark.parametrize("program, code, kind", [
    ("hazard_last_batch.py", "MCJ103", "exited"),  # the loop over process-local batches
    ("hazard_rank0_jit.py", "MCJ101", "divergence"),  # the rank-0 branch around a jitted call
])
def test_report_names_the_finding_that_explains_it(program, code, kind, guard_run):
    path = PROGRAMS / program
    run = guard_run(path)
    assert run.code == EXIT_DETECTED, run.stderr[-3000:]
    report = run.report
    jsonschema.validate(report, SCHEMA)
    assert report["kind"] == kind, report["summary"]
    causes = report["causes"]
    assert causes, (report["notes"], run.stderr[-3000:])
    first = causes[0]
    assert (first["code"], first["line"]) == (code, expect_line(path, code)), causes
    assert first["path"] == str(path) and first["end_line"] >= first["line"]
    # The site it explains is a place the report names for that process.
    site = first["site"]
    proc = next(p for p in report["processes"] if p["process_index"] == site["process"])
    named = {(loc["file"], loc["line"]) for loc in (proc["location"], (proc.get("dispatch") or {}).get("location")) if loc}
    assert (site["file"], site["line"]) in named or site["what"] == "stack", (site, proc)
    # Terminal, text and HTML show it under the verdict.
    head = f"likely cause: {code} at "
    assert head in run.stderr
    text = (run.report_dir / "report.txt").read_text().splitlines()
    assert any(line.strip().startswith(head) for line in text[:4]), text[:4]
    assert head in (run.report_dir / "report.html").read_text()


def _report_at(path: Path, line: int, kind: str = "exited") -> Report:
    loc = Location(file=str(path), line=line)
    return Report(kind=kind, summary="s", processes=[
        ProcessReport(process_index=0, status="exited", location=loc),
        ProcessReport(process_index=1, status="ok", dispatch=Dispatch(seq=3, name="jit(f)", location=loc))])


def test_a_report_no_finding_explains_says_so():
    """The correct look-alike of the last-batch program: the linter is silent, and the report says
    that no finding explains it (rather than nothing)."""
    path = PROGRAMS / "clean_last_batch.py"
    rep = attach_causes(_report_at(path, len(path.read_text().splitlines())), budget=LOADED)
    assert rep.causes == [], rep.notes
    assert cause_lines(rep) and "no mcjax-lint finding explains it" in render_text(rep)


def test_a_finding_only_above_the_site_is_a_possible_cause(tmp_path):
    """A finding whose statement holds the reported place is a likely cause; one that only stands
    above it in the same scope may have nothing to do with it, and says so."""
    path = tmp_path / "two_barriers.py"
    path.write_text(textwrap.dedent("""\
        import jax
        from jax.experimental import multihost_utils

        if jax.process_index() == 0:
            multihost_utils.sync_global_devices("leader")
        print("between")
        multihost_utils.sync_global_devices("everyone")
        """))
    inside = attach_causes(_report_at(path, 5), budget=LOADED)
    assert [(c["code"], c["line"], c["match"]) for c in inside.causes] == [("MCJ101", 4, "contains")], inside.notes
    assert cause_lines(inside)[0].startswith("likely cause: MCJ101 at ")
    below = attach_causes(_report_at(path, 7), budget=LOADED)
    assert [(c["code"], c["match"]) for c in below.causes] == [("MCJ101", "above")], below.notes
    assert cause_lines(below)[0].startswith("possible cause: MCJ101 at ")
    jsonschema.validate({"causes": below.causes}, {**SCHEMA, "required": []})


def test_function_scopes_of_a_file_in_a_newer_grammar(tmp_path):
    """A file the host Python cannot parse (3.12 syntax under 3.11) still has its functions, so
    a finding in one function is not taken as standing above a site in another."""
    path = tmp_path / "newer.py"
    path.write_text(textwrap.dedent("""\
        type Batch = list[int]


        def first():
            return f"{'nested'}"


        def second():
            pass
        """))
    assert sorted(_function_ranges(str(path))) == [(4, 5), (8, 9)]


def test_causes_never_fail_or_hold_up_a_report(tmp_path):
    # Out of time: the report goes on without causes, with a note naming the command to run...
    path = PROGRAMS / "hazard_last_batch.py"
    rep = attach_causes(_report_at(path, 28), budget=0.0)
    assert rep.causes is None and any("did not finish within 0 s" in n for n in rep.notes), rep.notes
    # ...and once the job is stopped, the supervisor rewrites the report with them.
    assert finish_late(rep, tmp_path / "late", wait=LOADED)
    saved = json.loads((tmp_path / "late" / "report.json").read_text())
    assert [c["code"] for c in saved["causes"]] == ["MCJ103"] and not any("did not finish" in n for n in saved["notes"])
    assert not finish_late(rep, tmp_path / "late")  # once
    # A reported file that does not parse: no causes from it, said in a note.
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    pass\n")
    rep = attach_causes(_report_at(broken, 2), budget=LOADED)
    assert rep.causes == [] and any("could not read" in n and "broken.py" in n for n in rep.notes), rep.notes
    # A snapshot on request is no failure: nothing to explain, the linter is not run.
    assert attach_causes(_report_at(path, 28, kind="snapshot")).causes is None


# -- learned from a run --------------------------------------------------------------------------

# An installed package the linter's tables do not know; its helper reaches a barrier.
LIBRARY = {
    "quietsync/__init__.py": "from quietsync._impl import sync_all\n",
    "quietsync/_impl.py": textwrap.dedent("""\
        from jax.experimental import multihost_utils


        def sync_all(tag):
            multihost_utils.sync_global_devices(tag)
        """),
}
# The program a guarded run sees calling it (on every process: correct).
TRAIN = textwrap.dedent("""\
    import jax
    import quietsync

    jax.distributed.initialize()


    def finish_epoch(step):
        quietsync.sync_all(f"epoch-{step}")


    for step in range(2):
        finish_epoch(step)
    print("done", jax.process_index())
    """)
# Its correct look-alike: process 0 only prints; every process calls the helper.
CORRECT = textwrap.dedent("""\
    import jax
    import quietsync

    jax.distributed.initialize()
    if jax.process_index() == 0:
        print("saving")
    quietsync.sync_all("save")
    """)
# A look-alike written later: the helper on process 0 only.
LATER = textwrap.dedent("""\
    import jax
    import quietsync

    jax.distributed.initialize()
    if jax.process_index() == 0:  # expect: MCJ101
        quietsync.sync_all("save")
    """)


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcjax_lint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_library_helper_learned_from_a_guarded_run_is_found_statically(tmp_path):
    lib, proj = tmp_path / "site", tmp_path / "proj"
    for rel, text in LIBRARY.items():
        (lib / rel).parent.mkdir(parents=True, exist_ok=True)
        (lib / rel).write_text(text)
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (proj / "train.py").write_text(TRAIN)
    (proj / "later.py").write_text(LATER)
    (proj / "correct.py").write_text(CORRECT)

    before = _lint(proj, "later.py")
    assert before.returncode == 0, before.stdout + before.stderr  # the linter cannot see into quietsync

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(lib), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-m", "runtime_guard", "-n", "2", "--collective-timeout", "30",
                          "--report-dir", str(tmp_path / "reports"), "python", "train.py"],
                         cwd=proj, env=env, capture_output=True, text=True, timeout=150)
    assert run.returncode == 0, run.stderr[-3000:]
    runs = sorted((proj / ".mcjax_cache" / "observed").glob("run-*.json"))
    assert len(runs) == 1, run.stderr[-2000:]
    seen = {f["name"] for f in json.loads(runs[0].read_text())["functions"]}
    # The helper under its defining module and its re-export, the program's own function; no
    # frames of JAX, the guard or the standard library.
    assert {"quietsync._impl.sync_all", "quietsync.sync_all", "train.finish_epoch"} <= seen, seen
    assert not any(n.split(".")[0] in ("jax", "jaxlib", "runtime_guard", "runpy", "threading") for n in seen), seen

    after = _lint(proj, "later.py")
    assert after.returncode == 1, after.stdout + after.stderr
    assert f"later.py:{expect_line(proj / 'later.py', 'MCJ101')}:" in after.stdout
    assert "MCJ101" in after.stdout and "seen doing cross-process work in a guarded run of train.py" in after.stdout
    assert _lint(proj, "correct.py").returncode == 0  # knowing the helper is collective adds no noise

    # Elsewhere (another checkout, CI): the same knowledge from the run file, with --observed.
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "other"\n')
    shutil.copy(proj / "later.py", other / "later.py")
    assert _lint(other, "later.py").returncode == 0
    given = _lint(other, "--observed", str(runs[0]), "later.py")
    assert given.returncode == 1 and "MCJ101" in given.stdout, given.stdout + given.stderr
    bad = _lint(other, "--observed", str(other / "pyproject.toml"), "later.py")
    assert bad.returncode == 2 and "not an observed-functions file" in bad.stderr and len(bad.stderr.splitlines()) == 1


PLUGIN_TEST = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp
    import numpy as np
    import pytest
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


    @pytest.mark.mcjax(processes=2, timeout=60)
    def test_rank0_branch():
        mesh = Mesh(np.array(jax.devices()), ("p",))
        x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("p")), np.ones(1, np.float32))
        if jax.process_index() == 0:
            jax.jit(jnp.max, out_shardings=NamedSharding(mesh, P()))(x)
        jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x)
    """)


@pytest.mark.timeout(200)
def test_pytest_plugin_failure_names_the_cause(pytester: pytest.Pytester) -> None:
    path = pytester.makepyfile(test_branch=PLUGIN_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", timeout=150)
    result.assert_outcomes(failed=1)
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "if jax.process_index() == 0" in t)
    assert f"likely cause: MCJ101 at test_branch.py:{line}" in result.stdout.str()


def test_causes_know_the_helpers_a_reported_file_imports(tmp_path):
    """`is_main()` defined in the package next to the program: linting the reported file alone
    would not know it is process-dependent; its imports are read with it."""
    from mcjax_lint.api import lint_paths

    (tmp_path / "pyproject.toml").write_text("")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text("import jax\n\n\ndef is_main():\n    return jax.process_index() == 0\n")
    (pkg / "train.py").write_text(textwrap.dedent("""\
        from jax.experimental import multihost_utils

        from .utils import is_main


        def save():
            if is_main():  # expect: MCJ101
                multihost_utils.sync_global_devices("save")
        """))
    findings, errors = lint_paths([pkg / "train.py"])
    assert [(f.code, f.line) for f in findings] == [("MCJ101", expect_line(pkg / "train.py", "MCJ101"))], errors
    assert lint_paths([pkg / "train.py"], imports=False)[0] == []  # (what reading the imports adds)
