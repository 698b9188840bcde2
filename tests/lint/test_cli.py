"""The mcjax-lint command line end to end: real engine, real files, exit codes 0/1/2."""

from __future__ import annotations

import os

import pytest
from cli_helpers import CLEAN, codes_by_file, demo_project, make_project, run_cli, run_json


def test_help_and_version():
    out = run_cli(os.getcwd(), "--help")
    assert out.returncode == 0 and "usage: mcjax-lint" in out.stdout
    out = run_cli(os.getcwd(), "--version")
    assert out.returncode == 0 and out.stdout.startswith("mcjax-lint ")


def test_clean_project_exits_0(tmp_path):
    make_project(tmp_path, {"pkg/__init__.py": "", "pkg/log.py": CLEAN})
    out = run_cli(tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "All checks passed!\n"
    assert run_cli(tmp_path, "--quiet").stdout == ""


def test_findings_exit_1_with_source_and_caret(tmp_path):
    demo_project(tmp_path)
    out = run_cli(tmp_path, "pkg")
    assert out.returncode == 1, out.stderr
    lines = out.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("pkg/ckpt.py:"))
    assert " MCJ101 [error] " in lines[first]
    assert lines[first + 2].lstrip().startswith("7 |") or "|" in lines[first + 2]
    assert "^" in lines[first + 3]
    assert lines[-1].startswith("Found ")
    assert "pkg/log.py" not in out.stdout  # rank-0 logging is fine


def test_cross_module_helper_seen_whichever_files_are_passed(tmp_path):
    demo_project(tmp_path)
    rc_all, all_findings, _ = run_json(tmp_path, ".")
    rc_one, one_file, _ = run_json(tmp_path, "pkg/ckpt.py", "--no-cache")
    assert rc_all == rc_one == 1
    assert [f for f in all_findings if f["path"] == "pkg/ckpt.py"] == one_file
    assert "MCJ101" in codes_by_file(one_file)["pkg/ckpt.py"]


def test_select_ignore_extend_select_on_the_command_line(tmp_path):
    demo_project(tmp_path)
    _, base, _ = run_json(tmp_path)
    codes = {f["code"] for f in base}
    assert {"MCJ101", "MCJ201"} <= codes
    _, only1, _ = run_json(tmp_path, "--select", "MCJ1")
    assert {f["code"][:4] for f in only1} == {"MCJ1"}
    _, no1, _ = run_json(tmp_path, "--ignore", "MCJ101")
    assert "MCJ101" not in {f["code"] for f in no1} and "MCJ201" in {f["code"] for f in no1}
    _, ext, _ = run_json(tmp_path, "--select", "MCJ1", "--extend-select", "MCJ201")
    assert {f["code"] for f in ext} >= {"MCJ101", "MCJ201"}
    out = run_cli(tmp_path, "--select", "MCJ9999")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "unknown rule code" in out.stderr


def test_config_file_controls_selection_severity_and_per_file_ignores(tmp_path):
    demo_project(tmp_path, """
        [tool.mcjax]
        ignore = ["MCJ900"]
        [tool.mcjax.severity]
        MCJ201 = "warning"
        [tool.mcjax.per-file-ignores]
        "pkg/ckpt.py" = ["MCJ1"]
    """)
    rc, found, _ = run_json(tmp_path)
    assert rc == 1
    by = codes_by_file(found)
    assert "pkg/ckpt.py" not in by
    assert all(f["severity"] == "warning" for f in found if f["code"] == "MCJ201")


def test_user_declared_process_dependent_source(tmp_path):
    make_project(tmp_path, {
        "app/__init__.py": "",
        "app/main.py": "from jax.experimental import multihost_utils\n"
                       "from launcher import rank_is_leader\n\n\n"
                       "def go():\n"
                       "    if rank_is_leader():\n"
                       "        multihost_utils.sync_global_devices('x')\n",
    })
    rc, found, _ = run_json(tmp_path)
    assert rc == 0 and found == []  # unknown function: assumed to agree across processes
    (tmp_path / "pyproject.toml").write_text(
        "[tool.mcjax]\nprocess-dependent-sources = ['launcher.rank_is_leader']\n")
    rc, found, _ = run_json(tmp_path)
    assert rc == 1 and [f["code"] for f in found] == ["MCJ101"]


def test_suppressions_end_to_end(tmp_path):
    demo_project(tmp_path)
    ckpt = tmp_path / "pkg" / "ckpt.py"
    ckpt.write_text(ckpt.read_text().replace("    if is_main():", "    if is_main():  # mcjax: ignore[MCJ101]"))
    _, found, _ = run_json(tmp_path, "pkg/ckpt.py")
    assert found == []
    ckpt.write_text(ckpt.read_text().replace("# mcjax: ignore[MCJ101]", "# mcjax: ignore[MCJ201]"))
    _, found, _ = run_json(tmp_path, "pkg/ckpt.py")
    assert sorted(f["code"] for f in found) == ["MCJ101", "MCJ900"]
    ckpt.write_text(ckpt.read_text().replace("# mcjax: ignore[MCJ201]", "# noqa: MCJ101"))
    _, found, _ = run_json(tmp_path, "pkg/ckpt.py")
    assert found == []


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("binary.py", b"\x00\x01\x02PK\x03\x04", "binary file"),
        ("latin1.py", "x = 'caf\u00e9'\n".encode("latin-1"), "not valid UTF-8"),
        ("broken.py", b"def f(:\n    pass\n", "syntax error"),
        ("huge.py", b"x = 1\n" * 40_000, "file too large"),
    ],
    # Named by file only: pytest puts the test id in $PYTEST_CURRENT_TEST, and an id holding the
    # 240 kB content made every subprocess the test starts fail with E2BIG (seen under xdist).
    ids=["binary", "latin1", "broken", "huge"],
)
def test_bad_files_are_one_line_each_exit_2_and_lose_nothing(tmp_path, name, content, message):
    demo_project(tmp_path, "[tool.mcjax]\nmax-file-size = 100000\n")
    (tmp_path / "pkg" / name).write_bytes(content)
    rc, found, err = run_json(tmp_path)
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"pkg/{name}: error: ") and message in lines[0]
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]  # the other files' findings are kept


def test_unreadable_path_and_missing_path(tmp_path):
    demo_project(tmp_path)
    os.symlink(tmp_path / "nowhere.py", tmp_path / "pkg" / "dangling.py")
    rc, found, err = run_json(tmp_path, ".", "does_not_exist.py")
    assert rc == 2
    lines = sorted(err.splitlines())
    assert lines == ["does_not_exist.py: error: no such file or directory",
                     "pkg/dangling.py: error: cannot read file: No such file or directory"]
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]


def test_bad_config_is_one_line_exit_2(tmp_path):
    demo_project(tmp_path, "[tool.mcjax]\nselect = ['MCJ1']\nunknown-option = 1\n")
    out = run_cli(tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert "unknown key 'unknown-option' in [tool.mcjax]" in out.stderr


def test_exit_zero_statistics_and_no_show_source(tmp_path):
    demo_project(tmp_path)
    out = run_cli(tmp_path, "--exit-zero", "--statistics")
    assert out.returncode == 0
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert {r[1] for r in rows} >= {"MCJ101", "MCJ201"} and all(r[0].isdigit() for r in rows)
    out = run_cli(tmp_path, "--no-show-source")
    assert out.returncode == 1 and " | " not in out.stdout


def test_excludes(tmp_path):
    demo_project(tmp_path, "[tool.mcjax]\nextend-exclude = ['pkg/ckpt.py']\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_bytes(b"\x00binary")  # excluded by default: never read
    _, found, err = run_json(tmp_path)
    assert "pkg/ckpt.py" not in codes_by_file(found) and err == ""
    # Named explicitly it is linted, unless --force-exclude (what pre-commit passes).
    _, found, _ = run_json(tmp_path, "pkg/ckpt.py")
    assert "pkg/ckpt.py" in codes_by_file(found)
    rc, found, _ = run_json(tmp_path, "--force-exclude", "pkg/ckpt.py")
    assert rc == 0 and found == []


def test_github_format(tmp_path):
    demo_project(tmp_path)
    out = run_cli(tmp_path, "--format", "github")
    assert out.returncode == 1
    line = next(x for x in out.stdout.splitlines() if "title=MCJ101" in x)
    assert line.startswith("::error file=pkg/ckpt.py,line=") and ",col=" in line and ",endLine=" in line
    assert "::MCJ101 " in line


def test_output_file_and_json_statistics(tmp_path):
    import json

    demo_project(tmp_path)
    out = run_cli(tmp_path, "--format", "json", "-o", "report.json")
    assert out.returncode == 1 and out.stdout == ""
    data = json.loads((tmp_path / "report.json").read_text())
    assert {"MCJ101", "MCJ201"} <= {d["code"] for d in data}
    out = run_cli(tmp_path, "--format", "json", "--statistics")
    rows = json.loads(out.stdout)
    assert {r["code"] for r in rows} == {d["code"] for d in data}
    assert sum(r["count"] for r in rows) == len(data)


def test_rule_prints_the_rules_page_and_text_links_to_it(tmp_path):
    from mcjax_lint.output.rule_pages import page_path
    from mcjax_lint.rules import RULES

    for code in RULES:
        out = run_cli(tmp_path, "rule", code.lower() if code == "MCJ203" else code)
        assert out.returncode == 0, out.stderr
        assert out.stdout == page_path(code).read_text(encoding="utf-8")
        assert out.stdout.startswith(f"# {code}: ")
    listing = run_cli(tmp_path, "rule")
    assert listing.returncode == 0 and all(f"{code}  {info.name}: " in listing.stdout for code, info in RULES.items())
    bad = run_cli(tmp_path, "rule", "MCJ999")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "unknown rule code 'MCJ999'" in bad.stderr

    # Each finding of the text output names the page that `rule` prints and SARIF embeds.
    demo_project(tmp_path)
    out = run_cli(tmp_path, "pkg")
    assert out.returncode == 1
    helps = [line for line in out.stdout.splitlines() if line.startswith("  = help: ")]
    assert len(helps) == out.stdout.count(" [error] ") + out.stdout.count(" [warning] ") > 0
    for line in helps:
        path = line.split()[2]
        code = line.rsplit("rule ", 1)[1].rstrip("`)")
        assert (tmp_path / path).resolve() == page_path(code).resolve()
    assert "= help:" not in run_cli(tmp_path, "pkg", "--no-show-source").stdout


def test_exit_without_teardown_only_as_the_program(tmp_path):
    """As the program, mcjax-lint skips the interpreter's teardown (os._exit) but keeps its exit
    code and output; under a profiler, or called from another program, it returns normally."""
    import subprocess
    import sys

    demo_project(tmp_path)
    out = run_cli(tmp_path, "pkg")
    assert out.returncode == 1 and "MCJ" in out.stdout, out.stderr
    prof = tmp_path / "prof.out"
    run = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "mcjax_lint", "pkg"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "MCJ" in run.stdout and prof.exists() and prof.stat().st_size > 0, run.stderr  # (cProfile drops the code)
    caller = ("import sys\nsys.argv = ['mcjax-lint', 'pkg']\nfrom mcjax_lint.cli import main\n"
              "code = main()\nprint('caller continues', code)\n")
    run = subprocess.run([sys.executable, "-c", caller], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.stdout.rstrip().endswith("caller continues 1"), run.stderr
