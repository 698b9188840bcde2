"""Every report kind, from real `mcjax-guard -n` runs, says the same thing everywhere: the dispatch
numbers and lines of its headline are those of its process table, in report.txt, report.json,
report.html and on the terminal (a pipe: never wrapped); statuses follow how processes ended; an
`exited` report names the process that ran the one-sided dispatch and the one that left, each with
its line. Also: the program's tracebacks without the guard's frames."""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PROGRAM, child_env, point_line

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
FIXTURES = ROOT / "fixtures" / "programs"

# kind -> (program, program args, processes, extra guard options)
RUNS = {
    "divergence": (FIXTURES / "hazard_rank0_jit.py", [], 2, []),
    "exited": (FIXTURES / "hazard_last_batch.py", [], 2, []),
    "died": (FIXTURES / "event_killed.py", [], 2, []),
    "missing": (PROGRAM, ["sleep", "1"], 2, ["--timeout", "5"]),
    "hang": (PROGRAM, ["stall", "0"], 2, ["--timeout", "5"]),
}


def guard(args: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = child_env({"MCJAX_RUN_DIR": str(cwd / "run"), "COLUMNS": "80"})
    proc = subprocess.Popen([sys.executable, "-m", "runtime_guard", *args], env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """kind -> (report directory, the supervisor's stderr), one real run each."""
    out = {}
    for kind, (program, pargs, n, opts) in RUNS.items():
        work = tmp_path_factory.mktemp(kind)
        res = guard(["-n", str(n), "--collective-timeout", "30", "--report-dir", str(work / "report"), *opts,
                     "python", str(program), *pargs], work)
        assert (work / "report" / "report.json").is_file(), (kind, res.stderr[-3000:])
        out[kind] = (work / "report", res.stderr)
    return out


# -- what each output says ------------------------------------------------------------------------

def text_rows(text: str) -> dict[int, dict[str, str]]:
    """report.txt's process blocks: status, dispatch number, and every file:line they mention."""
    rows: dict[int, dict[str, str]] = {}
    cur = None
    for line in text.split("\n\n", 1)[0].splitlines():
        m = re.match(r"  process (\d+) \[([^\]]+)\]", line)
        if m:
            cur = rows.setdefault(int(m.group(1)), {"status": m.group(2), "seq": "", "places": ""})
            continue
        if cur is None or not line.startswith("    "):
            continue
        m = re.match(r"    dispatch #(\d+)", line)
        if m:
            cur["seq"] = m.group(1)
        cur["places"] += " " + line.strip()
    return rows


def html_rows(page: str) -> dict[int, dict[str, str]]:
    rows = {}
    for m in re.finditer(r'<tr class="proc[^"]*" data-proc="(\d+)">(.*?)</tr>', page, re.S):
        cells = [htmllib.unescape(re.sub(r"<[^>]+>", " ", c)).strip() for c in re.findall(r"<td>(.*?)</td>", m.group(2), re.S)]
        seq = re.match(r"#(\d+)", cells[2])
        rows[int(m.group(1))] = {"status": cells[1], "seq": seq.group(1) if seq else "", "places": " ".join(cells[3:5])}
    return rows


def json_rows(data: dict) -> dict[int, dict[str, str]]:
    rows = {}
    for p in data["processes"]:
        places = [loc for loc in (p["location"], (p["dispatch"] or {}).get("location")) if loc]
        rows[p["process_index"]] = {
            "status": p["status"],
            "seq": str(p["dispatch"]["seq"]) if p["dispatch"] else str(p["last_seq"] or ""),
            "places": " ".join(f"{Path(loc['file']).name}:{loc['line']}" for loc in places),
        }
    return rows


def headline_facts(summary: str) -> tuple[set[str], set[str]]:
    """Dispatch numbers and file:line places (file names only) a headline mentions."""
    seqs = set(re.findall(r"#(\d+)", summary))
    places = {f"{Path(f).name}:{n}" for f, n in re.findall(r"([\w./-]+\.py):(\d+)", summary)}
    return seqs, places


@pytest.mark.parametrize("kind", list(RUNS))
def test_headline_agrees_with_the_table_everywhere(reports, kind):
    report_dir, stderr = reports[kind]
    data = json.loads((report_dir / "report.json").read_text())
    assert data["kind"] == kind, data["summary"]
    text = (report_dir / "report.txt").read_text()
    page = (report_dir / "report.html").read_text()
    seqs, places = headline_facts(data["summary"])
    assert places, data["summary"]  # every kind names at least one line
    for name, rows in (("text", text_rows(text)), ("html", html_rows(page)), ("json", json_rows(data))):
        assert set(rows) == {p["process_index"] for p in data["processes"]}, (name, rows)
        table_seqs = {r["seq"] for r in rows.values()}
        assert seqs <= table_seqs | {str(data["seq"])}, (name, kind, seqs, table_seqs, data["summary"])
        table_places = " ".join(r["places"] for r in rows.values())
        found = {Path(m[0]).name + ":" + m[1] for m in re.findall(r"([\w./-]+\.py):(\d+)", table_places)}
        assert places <= found, (name, kind, places - found, data["summary"])
        # One status per process, the same in every output, and it follows how the process ended.
        for p in data["processes"]:
            assert rows[p["process_index"]]["status"].split(" (")[0] == p["status"], (name, rows, p["status"])
    for p in data["processes"]:
        if p["exit_code"] is not None and p["exit_code"] < 0:
            assert p["status"] == "died", p
    # The headline is the same sentence in every output; its dispatch line says what the number is.
    assert text.splitlines()[0] == f"mcjax-guard: {kind.upper()}: {data['summary']}"
    assert htmllib.escape(data["summary"], quote=False) in page
    assert "waiting on: ?" not in text and "at ?" not in text
    if any(p["snapshots"] for p in data["processes"]):
        assert "no stacks could be collected" not in data["summary"] + text
    # Piped, the terminal copy is the same text, unwrapped: every path of the headline is whole.
    flat = stderr.replace("\r", "")
    assert f"mcjax-guard: {kind.upper()}: {data['summary']}" in flat.splitlines(), flat[-3000:]


def test_exited_names_who_ran_the_one_sided_dispatch_and_who_left(reports):
    data = json.loads((reports["exited"][0] / "report.json").read_text())
    program = RUNS["exited"][0]
    lines = program.read_text().splitlines()
    step = next(i for i, s in enumerate(lines, 1) if "w = train_step(w, x)" in s)
    end = next(i for i, s in enumerate(lines, 1) if s.startswith('print("done"'))
    procs = {p["process_index"]: p for p in data["processes"]}
    # Process 1 holds one batch more: it ran dispatch #5, which process 0 (exit 0) never ran.
    assert procs[1]["status"] == "diverged" and procs[1]["dispatch"]["seq"] == data["seq"], procs[1]
    assert procs[0]["status"] == "exited" and procs[0]["exit_code"] == 0, procs[0]
    s = data["summary"]
    assert f"process 1 ran dispatch #{data['seq']} jit(train_step) at " in s and f"{program.name}:{step}" in s, s
    assert "process 0 did not: it left at " in s and f"{program.name}:{end}" in s, s
    assert data["merged_stacks"]["outliers"] == [1], s


def test_died_gives_every_exit_status(reports):
    data = json.loads((reports["died"][0] / "report.json").read_text())
    text = (reports["died"][0] / "report.txt").read_text()
    dead = [p for p in data["processes"] if p["status"] == "died"]
    assert [p["process_index"] for p in dead] == [1] and dead[0]["exit_code"] == -signal.SIGKILL, data["processes"]
    assert "process 1 [died (killed by SIGKILL)] <<" in text  # the guard's culprit, though it has no stacks
    assert data["merged_stacks"]["outliers"] == [1], data["summary"]
    assert "dispatch #{}: the first that process 1 never ran".format(data["seq"]) in text


def test_hang_and_missing_name_the_lines_of_the_program(reports):
    miss = json.loads((reports["missing"][0] / "report.json").read_text())
    assert f"{PROGRAM.name}:{point_line('sleep-odd')}" in miss["summary"], miss["summary"]
    hang = json.loads((reports["hang"][0] / "report.json").read_text())
    assert f"{PROGRAM.name}:{point_line('stall')}" in hang["summary"], hang["summary"]
    assert all(p["status"] == "hung" for p in hang["processes"]), hang["processes"]


# -- tracebacks -------------------------------------------------------------------------------------

def _tracebacks(stderr: str) -> list[str]:
    """The File lines of each traceback printed (prefixes "[i] " removed)."""
    lines = [re.sub(r"^\[\d+\] ", "", s) for s in stderr.splitlines()]
    return [s for s in lines if s.startswith("  File ")]


def test_syntax_error_prints_as_python_prints_it(tmp_path):
    bad = tmp_path / "bad_syntax.py"
    bad.write_text("import jax\n\ndef f(:\n    pass\n")
    res = guard(["-n", "2", "-q", "python", str(bad)], tmp_path, timeout=120)
    assert res.returncode != 0
    files = _tracebacks(res.stderr)
    assert files and all(str(bad) in s for s in files), res.stderr[-3000:]
    assert "runtime_guard" not in res.stderr and "runpy" not in res.stderr, res.stderr[-3000:]
    assert res.stderr.count("SyntaxError: invalid syntax") == 2  # once per process


def test_strict_divergence_error_ends_on_the_users_line(tmp_path):
    program = FIXTURES / "hazard_rank0_jit.py"
    res = guard(["-n", "2", "--mode", "strict", "--collective-timeout", "30", "--report-dir", str(tmp_path / "r"),
                 "python", str(program)], tmp_path)
    assert "DivergenceError" in res.stderr, res.stderr[-3000:]
    files = _tracebacks(res.stderr)
    assert files, res.stderr[-3000:]
    assert not [s for s in files if "/runtime_guard/" in s or "runpy" in s], files
    # Process 0's traceback ends on its eval_loss line (the one only process 0 runs).
    line = next(i for i, s in enumerate(program.read_text().splitlines(), 1) if "eval_loss(w, x)" in s and "print" in s)
    assert f'  File "{program}", line {line}, in <module>' in files, files
