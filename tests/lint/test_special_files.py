"""Paths that are no regular file never hang or crash the linter: a `.py` FIFO (whose `open()`
blocks until a writer comes) and a symbolic link loop are each one line on stderr, exit status
2, and every other file is still linted. Each run is bounded by a timeout: a hang fails the test."""

from __future__ import annotations

import json
import os

import pytest
from cli_helpers import codes_by_file, demo_project, run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def run_json(cwd, *args: str, timeout: int) -> tuple[int, list[dict], str]:
    out = run_cli(cwd, "--format", "json", *args, timeout=timeout)
    return out.returncode, json.loads(out.stdout or "[]"), out.stderr


def _err_lines(err: str) -> list[str]:
    return sorted(line for line in err.splitlines() if line)


def test_fifo_found_under_a_directory_is_skipped(tmp_path):
    demo_project(tmp_path)
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    rc, found, err = run_json(tmp_path, ".", timeout=60)
    assert rc == 2
    assert _err_lines(err) == ["pkg/pipe.py: error: not a regular file (a FIFO); not read"]
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]


def test_fifo_named_on_the_command_line_is_skipped(tmp_path):
    demo_project(tmp_path)
    os.mkfifo(tmp_path / "pkg" / "pipe.py")
    rc, found, err = run_json(tmp_path, "pkg/pipe.py", "pkg/ckpt.py", timeout=60)
    assert rc == 2
    assert _err_lines(err) == ["pkg/pipe.py: error: not a regular file (a FIFO); not read"]
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]


def test_fifo_in_a_git_work_tree_and_a_link_to_one(tmp_path):
    """git lists neither a FIFO nor what a link points at: the link to a FIFO must be caught
    after git's listing too (the cross-module project discovery reads the same files)."""
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("needs git")
    demo_project(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=60)
    os.mkfifo(tmp_path / "pipe.fifo")
    os.symlink("../pipe.fifo", tmp_path / "pkg" / "linked.py")
    rc, found, err = run_json(tmp_path, ".", timeout=60)
    assert rc == 2
    assert _err_lines(err) == ["pkg/linked.py: error: not a regular file (a FIFO); not read"]
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]


def test_symlink_loop_named_on_the_command_line(tmp_path):
    demo_project(tmp_path)
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    rc, found, err = run_json(tmp_path, "loop_a.py", "pkg", timeout=60)
    assert rc == 2
    assert _err_lines(err) == ["loop_a.py: error: symbolic link loop; not read"], err
    assert "Traceback" not in err
    assert "MCJ101" in codes_by_file(found)["pkg/ckpt.py"]


def test_symlink_loop_alone(tmp_path):
    """The only path given is a loop: no start directory to find a configuration from."""
    os.symlink("loop_b.py", tmp_path / "loop_a.py")
    os.symlink("loop_a.py", tmp_path / "loop_b.py")
    rc, found, err = run_json(tmp_path, "loop_a.py", timeout=60)
    assert (rc, found) == (2, [])
    assert _err_lines(err) == ["loop_a.py: error: symbolic link loop; not read"]
