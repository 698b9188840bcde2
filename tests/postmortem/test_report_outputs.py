"""The report's outputs from one real hang: HTML rendered in headless Chromium (screenshot and DOM),
JSON valid against docs/report.schema.json for every kind, and re-rendering a saved report."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from runtime_guard.postmortem import build_postmortem_report, write_postmortem
from runtime_guard.report.model import KINDS, Dispatch, Location, ProcessReport, Report
from runtime_guard.report.render_text import render_text
from runtime_guard.report.writer import render, write_report
from runtime_guard.stacks import collect_stacks

from .conftest import PROGRAM, HangJob, point_line
from .pngread import read_png

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


@pytest.fixture(scope="module")
def hang_report(tmp_path_factory):
    """A hang report from a real job: process 0 in an extra all-reduce, 1 and 2 in sync_global_devices."""
    work = tmp_path_factory.mktemp("branch")
    job = HangJob("branch", 3, 0, work)
    try:
        job.wait_reached()
        stacks = collect_stacks(job.targets, native="first", snapshots=2, interval=1.0, timeout=10.0)
        procs = [ProcessReport(process_index=i, pid=p.pid, last_seq=7, dispatch=_dispatch(7, "jit(total)"))
                 for i, p in enumerate(job.procs)]
        report, _ = write_postmortem("hang", procs, stacks, work / "report", ["guard: no dispatch completed for 5 s"],
                                     headline="no progress for 5 s", job_id="test-job")
    finally:
        job.kill()
    assert report.merged_stacks["outliers"] == [0], report.summary
    return work / "report", report


def _dispatch(seq: int, name: str, **fields: str) -> Dispatch:
    base = {"program": "a1b2c3", "in_shapes": "f32[1,4]", "in_dtypes": "float32", "in_shardings": "P('x')",
            "processes": "0-2"}
    base.update(fields)
    return Dispatch(seq=seq, name=name, fields=base, location=Location(str(PROGRAM), point_line("branch-others"), "<module>"))


# -- HTML in a real browser ------------------------------------------------------------------------

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--disable-dev-shm-usage"]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run_chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, timeout=120)


def test_html_is_self_contained(hang_report):
    html = (hang_report[0] / "report.html").read_text()
    assert not re.search(r"""\b(src|href)\s*=|<link\b|@import|url\(""", html), "the report must not fetch anything"
    assert "default-src 'none'" in html
    assert html.count("<svg") == len(hang_report[1].merged_stacks["trees"])


def test_html_renders_the_tree_in_chromium(hang_report, tmp_path):
    report_dir, report = hang_report
    url = (report_dir / "report.html").resolve().as_uri()
    dom = _run_chromium(["--dump-dom", url], tmp_path)
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    text = dom.stdout.decode()
    # The script ran to its end and built the drill-down of the odd process (process 0).
    assert 'data-ready="1"' in text
    detail = text[text.index('id="detail"'):]
    assert "process 0 [hung]" in detail and "snapshot 1" in detail and "dispatch #7: jit(total)" in detail
    # Every merged-tree node is drawn, the odd branch in the outlier style.
    nodes = re.findall(r'<g class="node ([^"]*)" data-procs="([^"]*)"', text)
    def count(n):
        return 1 + len(n["ends"]) + sum(count(c) for c in n["children"])
    assert len(nodes) == count(report.merged_stacks["trees"][0]["root"])
    assert any("outlier" in cls and procs == "0" for cls, procs in nodes)
    assert not any("outlier" in cls and "1" in procs.split(",") for cls, procs in nodes)

    shot = tmp_path / "report.png"
    res = _run_chromium([f"--screenshot={shot}", "--window-size=1280,900", url], tmp_path)
    assert res.returncode == 0 and shot.is_file(), res.stderr.decode(errors="replace")[-2000:]
    img = read_png(shot.read_bytes())[:, :, :3].astype(int)
    assert img.shape[:2] == (900, 1280)
    colours = np.unique(img.reshape(-1, 3), axis=0)
    assert len(colours) > 50, "the page is blank"

    def near(rgb, tol=40):
        return (np.abs(img - np.array(rgb)).sum(axis=2) < tol)

    red = near((224, 49, 49))  # outlier node borders and edges (#e03131)
    blue = near((231, 245, 255), tol=8)  # fill of the other processes' user frames (#e7f5ff)
    assert red.sum() > 300 and blue.sum() > 2000, (int(red.sum()), int(blue.sum()))
    # The red outlier branch is in the tree picture, above the process table.
    rows = np.nonzero(red.any(axis=1))[0]
    assert rows.min() < 600


def test_csp_runs_only_the_reports_own_script(hang_report, tmp_path):
    """The policy allows the page's inline script by its sha256: an inline script added to the file
    (or a tampered one) does not run, while the report's own does."""
    page = (hang_report[0] / "report.html").read_text()
    assert "'unsafe-inline'" not in page and "script-src 'sha256-" in page
    foreign = page.replace("</body>", "<script>document.body.dataset.foreign = '1';</script></body>")
    (tmp_path / "tampered.html").write_text(foreign)
    dom = _run_chromium(["--dump-dom", (tmp_path / "tampered.html").resolve().as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr.decode(errors="replace")[-2000:]
    text = dom.stdout.decode()
    assert 'data-ready="1"' in text and 'data-foreign' not in text


def test_off_a_terminal_nothing_is_wrapped(hang_report):
    """Piped or in a CI log the report is plain text whatever the width: no path broken mid-word."""
    import io

    from rich.console import Console

    from runtime_guard.report.writer import print_report

    report = copy.deepcopy(hang_report[1])
    long_dir = "/very/long/path/" + "segment/" * 12
    for p in report.processes:
        p.location.file = long_dir + "rank0_branch.py"
    out = io.StringIO()
    print_report(report, Console(file=out, width=80, force_terminal=False))
    text = out.getvalue()
    assert text.splitlines()[0] == f"mcjax-guard: HANG: {report.summary}"
    assert text.count(long_dir + "rank0_branch.py:") >= len(report.processes), text
    assert "Stacks (innermost frame first):" not in text  # the full stacks stay in report.txt


# -- JSON schema, every kind -------------------------------------------------------------------------

def _reports_of_every_kind(hang: Report) -> dict[str, Report]:
    stacks = {p.process_index: p.snapshots for p in hang.processes}
    out = {"hang": hang}
    out["snapshot"] = build_postmortem_report("snapshot", [ProcessReport(i) for i in stacks], stacks, headline="snapshot on request")
    div = [ProcessReport(0, "diverged", pid=11, dispatch=_dispatch(8, "jit(scaled_total)", program="ffff")),
           ProcessReport(1, "diverged", pid=12, dispatch=_dispatch(8, "jit(total)")),
           ProcessReport(2, "diverged", pid=13, dispatch=_dispatch(8, "jit(total)"))]
    out["divergence"] = build_postmortem_report("divergence", div, stacks, headline="dispatch #8 differs", seq=8,
                                                differing_fields=["program"])
    out["missing"] = build_postmortem_report(
        "missing", [ProcessReport(0, "ok", last_seq=9), ProcessReport(1, "never-joined", last_seq=8), ProcessReport(2, "ok", last_seq=9)],
        stacks, headline="process 1 never joined dispatch #9", seq=9)
    out["exited"] = build_postmortem_report(
        "exited", [ProcessReport(0, "ok"), ProcessReport(1, "exited", exit_code=0, last_seq=8), ProcessReport(2, "ok")],
        {i: s for i, s in stacks.items() if i != 1}, headline="process 1 exited after dispatch #8", seq=9)
    out["died"] = build_postmortem_report(
        "died", [ProcessReport(0, "ok"), ProcessReport(1, "died", exit_code=-9, note="killed by SIGKILL"), ProcessReport(2, "ok")],
        {i: s for i, s in stacks.items() if i != 1}, headline="process 1 died (SIGKILL)")
    return out


def test_json_validates_for_every_kind(hang_report, tmp_path):
    reports = _reports_of_every_kind(hang_report[1])
    assert set(reports) == set(KINDS)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for kind, rep in reports.items():
        paths = write_report(rep, tmp_path / kind)
        data = json.loads(paths["json"].read_text())
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]
        assert not errors, (kind, errors[:5])
        assert Report.from_dict(data).to_dict() == data, f"{kind}: to_dict/from_dict round trip"
    # The died report keeps the guard's statuses; the dead process has no stacks and says so.
    died = {p.process_index: p for p in reports["died"].processes}
    assert died[1].status == "died" and died[1].snapshots == [] and died[0].status == "ok"


def test_schema_rejects_what_is_not_a_report(hang_report):
    data = hang_report[1].to_dict()
    bad_kind = dict(data, kind="crash")
    bad_node = copy.deepcopy(data)
    bad_node["merged_stacks"]["trees"][0]["root"]["children"][0]["processes"] = ["zero"]
    for bad in (bad_kind, bad_node, {"summary": "x", "processes": []}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


# -- re-rendering -------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,name", [("json", "report.json"), ("text", "report.txt"), ("html", "report.html")])
def test_mcjax_guard_report_rerenders_the_same_content(hang_report, tmp_path, fmt, name):
    report_dir = hang_report[0]
    res = subprocess.run([sys.executable, "-m", "runtime_guard", "report", str(report_dir), "--format", fmt],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout == (report_dir / name).read_text()


def test_report_rich_and_bad_input(hang_report, tmp_path):
    report_dir, report = hang_report
    out = tmp_path / "rich.txt"
    res = subprocess.run([sys.executable, "-m", "runtime_guard", "report", str(report_dir / "report.json"),
                          "--format", "rich", "-o", str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    rich_text = out.read_text()
    assert "HANG" in rich_text and "merged stacks, main thread [0-2]" in rich_text and "<<" in rich_text
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "report.json").write_text("{not json")
    # Well-formed JSON, malformed report: a wrong-typed kind, a list for merged_stacks, a wrong
    # type deep inside (an exit code, the merged trees).
    good = json.loads((report_dir / "report.json").read_text())
    broken = {"kind-int": dict(good, kind=3), "merged-list": dict(good, merged_stacks=[]),
              "exit-text": dict(good, processes=[dict(good["processes"][0], exit_code="0")]),
              "trees-int": dict(good, merged_stacks=dict(good["merged_stacks"], trees=5))}
    for name, data in broken.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "report.json").write_text(json.dumps(data))
    for path in (tmp_path / "bad", tmp_path / "nothing-here", *(tmp_path / n for n in broken)):
        for fmt in ("text", "html", "rich"):
            res = subprocess.run([sys.executable, "-m", "runtime_guard", "report", str(path), "--format", fmt],
                                 capture_output=True, text=True, timeout=120, cwd=ROOT)
            assert res.returncode == 2 and res.stderr.startswith("mcjax-guard report:"), (path.name, fmt, res.stderr)
            assert len(res.stderr.strip().splitlines()) == 1 and not res.stdout, (path.name, fmt, res.stderr)


def test_text_report_shows_tree_and_stacks(hang_report):
    text = render_text(hang_report[1])
    assert text == render(hang_report[1], "text")
    lines = text.splitlines()
    tree_start = lines.index(next(line for line in lines if line.startswith("Merged stacks")))
    assert lines[tree_start + 2].lstrip().startswith(">> [0] at ")  # the odd class first
    assert any(">> [0] rank_zero_work (" in line for line in lines)
    assert any("waiting on: a collective (gloo all-gather) in sync_global_devices" in line and "[1,2]" in line for line in lines)
    assert "Stacks (innermost frame first):" in text and "(same Python stacks as the previous snapshot)" in text
