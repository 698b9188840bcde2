"""`mcjax-guard`'s launcher and command line on real local JAX processes: what each process gets
(devices, hash seed, its initialize() arguments, a loopback coordinator), what the guard says
(banner, summary, -q), its configuration table, and `dump`'s refusal of what it cannot verify."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from runtime_guard.local_job import NO_CLUSTER

ROOT = Path(__file__).resolve().parents[2]
# Cluster and device settings a developer's shell may hold: each test states its own.
_SCRUB = ("JAX_NUM_CPU_DEVICES", "XLA_FLAGS", "PYTHONHASHSEED", "JAX_COORDINATOR_ADDRESS", "JAX_PLATFORMS",
          "MCJAX_NUM_PROCESSES", "MCJAX_PROCESS_ID", "MCJAX_COORDINATOR_ADDRESS", "SLURM_JOB_ID",
          "OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "MCJAX_RUN_DIR")

# Prints what this process was given; a few cross-process computations, then a clean end.
WHO = textwrap.dedent("""\
    import os, sys
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.distributed.initialize()
    print(f"who p={jax.process_index()} n={jax.process_count()} devices={jax.local_device_count()} "
          f"seed={os.environ.get('PYTHONHASHSEED')}", flush=True)
    mesh = Mesh(np.array(jax.devices()), ("d",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("d")),
                                               np.ones((jax.local_device_count(),), np.float32))
    total = jax.jit(lambda a: a.sum())
    for _ in range(STEPS):
        y = total(x)
        y.block_until_ready()  # (2 cores, 2 devices each: never queue many collectives; gloo starves)
    """)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(PYTHONUNBUFFERED="1", **extra)
    return env


def _guard(tmp_path: Path, args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime_guard", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)


def _program(tmp_path: Path, text: str, name: str = "prog.py") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _who(out: str) -> dict[int, dict[str, str]]:
    """`who p=0 ...` lines by process index."""
    got = {}
    for line in out.splitlines():
        if "who p=" in line:
            fields = dict(kv.split("=", 1) for kv in line.split("who ", 1)[1].split())
            got[int(fields["p"])] = fields
    return got


def _who_run(tmp_path: Path, args: list[str], env: dict[str, str], steps: int = 2) -> tuple[subprocess.CompletedProcess, dict]:
    prog = _program(tmp_path, WHO.replace("STEPS", str(steps)))
    run = _guard(tmp_path, ["-n", "2", "--collective-timeout", "60", *args, "python", str(prog)], env)
    assert run.returncode == 0, run.stderr[-4000:]
    who = _who(run.stdout)
    assert sorted(who) == [0, 1], run.stdout[-2000:]
    return run, who


# -- what each process gets --------------------------------------------------------------------


def test_clean_run_says_banner_and_summary_and_respects_the_environment(tmp_path):
    run, who = _who_run(tmp_path, [], _env(JAX_NUM_CPU_DEVICES="3", PYTHONHASHSEED="7"), steps=12)
    assert all(w["devices"] == "3" for w in who.values()), who
    # A fixed seed S becomes S+i: processes hash strings differently, as separate hosts do.
    assert (who[0]["seed"], who[1]["seed"]) == ("7", "8")
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("mcjax-guard:")]
    assert lines[0].startswith("mcjax-guard: 2 processes x 3 CPU devices (JAX_NUM_CPU_DEVICES), fast mode, "
                               "hang threshold 60 s until step times are learned, reports to "), lines
    # 12 sums, plus whatever JAX itself ran across processes (the global array's creation).
    summary = lines[-1]
    assert summary.startswith("mcjax-guard: 2 processes, ") and summary.endswith(" dispatches compared, no divergence")
    assert int(summary.split(", ")[1].split()[0].replace(",", "")) >= 12, summary
    assert "processes alive" not in run.stderr  # no live line off a terminal
    assert not (tmp_path / "mcjax-reports").exists()


def test_live_status_line_on_a_terminal_only(tmp_path):
    import pty
    import select

    prog = _program(tmp_path, WHO.replace("STEPS", "40").replace(
        "        y.block_until_ready()", "        y.block_until_ready()\n        __import__('time').sleep(0.05)"))
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "runtime_guard", "-n", "2", "--devices-per-process", "1", "python",
                             str(prog)], env=_env(), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    out, deadline = b"", time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the terminal's other side closed: everyone exited
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert "mcjax-guard: 2/2 alive · " in text and " dispatches compared" in text, text[-3000:]
    assert "mcjax-guard: 2 processes, " in text and "no divergence" in text
    assert text.count("who p=") == 2  # the program's output still comes through


@pytest.mark.parametrize("env, args, devices, seeds", [
    ({}, [], "2", ("None", "None")),  # the default mirrors a host with several devices
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=3"}, [], "3", ("None", "None")),
    ({"JAX_NUM_CPU_DEVICES": "3", "PYTHONHASHSEED": "7"}, ["--devices-per-process", "1", "--keep-hash-seed"],
     "1", ("7", "7")),
], ids=["default", "xla-flags", "flags-win"])
def test_devices_and_hash_seed_per_process(tmp_path, env, args, devices, seeds):
    run, who = _who_run(tmp_path, ["-q", *args], _env(**env))
    assert all(w["devices"] == devices for w in who.values()), who
    assert (who[0]["seed"], who[1]["seed"]) == seeds
    assert "mcjax-guard" not in run.stderr, run.stderr[-2000:]  # -q: not a word from the guard


def test_program_initialize_arguments_conflicting_with_n_are_overridden(tmp_path):
    # A script written for one host: every process would claim id 0 of a coordinator of its own.
    prog = _program(tmp_path, textwrap.dedent("""\
        import jax
        jax.distributed.initialize("localhost:1", num_processes=3, process_id=0)
        print(f"who p={jax.process_index()} n={jax.process_count()}", flush=True)
        """))
    run = _guard(tmp_path, ["-n", "2", "python", str(prog)], _env())
    assert run.returncode == 0, run.stderr[-4000:]
    assert {p: w["n"] for p, w in _who(run.stdout).items()} == {0: "2", 1: "2"}
    warned = [ln for ln in run.stderr.splitlines() if "overrides the program's jax.distributed.initialize(" in ln]
    assert len(warned) == 2 and "process_id=0" in warned[0] + warned[1], run.stderr[-3000:]
    assert "DIED" not in run.stderr and not (tmp_path / "mcjax-reports").exists()


def test_without_n_and_without_a_cluster_one_line_says_what_to_do(tmp_path):
    prog = _program(tmp_path, "import jax\njax.distributed.initialize()\nprint('never')\n")
    run = _guard(tmp_path, ["python", str(prog)], _env())
    assert run.returncode == 2, run.stderr[-3000:]
    assert NO_CLUSTER in run.stderr.splitlines()
    assert "Traceback" not in run.stderr and "coordinator_address should be defined" not in run.stderr
    assert "never" not in run.stdout


def test_coordinator_listens_on_loopback_only(tmp_path):
    # Process 0 hosts the coordination service: it reads the kernel's table of listening sockets
    # for the coordinator's port (never connecting anywhere) and prints their bound addresses.
    prog = _program(tmp_path, textwrap.dedent("""\
        import os, socket, struct
        import jax
        jax.distributed.initialize()
        port = int(os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)[1])
        if jax.process_index() == 0:
            for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
                for row in open(table).read().splitlines()[1:]:
                    local, state = row.split()[1], row.split()[3]
                    addr, p = local.split(":")
                    if state != "0A" or int(p, 16) != port:  # 0A: LISTEN
                        continue
                    raw = bytes.fromhex(addr)
                    raw = b"".join(struct.pack("<I", w) for w in struct.unpack(">%dI" % (len(raw) // 4), raw))
                    print("listening", socket.inet_ntop(family, raw), flush=True)
        """))
    run = _guard(tmp_path, ["-n", "2", "-q", "python", str(prog)], _env())
    assert run.returncode == 0, run.stderr[-4000:]
    bound = [ln.split("listening ", 1)[1] for ln in run.stdout.splitlines() if "listening " in ln]
    assert bound, run.stdout  # the service was found listening
    # 127.0.0.1 (gRPC may show it v4-mapped on an IPv6 socket); never 0.0.0.0, [::] or another address.
    assert all((ip.ipv4_mapped or ip).is_loopback for ip in map(ipaddress.ip_address, bound)), bound


# -- configuration and small commands -------------------------------------------------------------


def test_guard_table_in_pyproject_is_read_and_the_command_line_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax.guard]\ndevices-per-process = 3\nquiet = true\n")
    run, who = _who_run(tmp_path, [], _env())
    assert all(w["devices"] == "3" for w in who.values()) and "mcjax-guard" not in run.stderr
    run, who = _who_run(tmp_path, ["--devices-per-process", "1"], _env())
    assert all(w["devices"] == "1" for w in who.values())


def test_unknown_guard_key_is_one_line_like_the_linters(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax.guard]\ndevices_per_process = 3\n")
    prog = _program(tmp_path, "print('never')\n")
    run = _guard(tmp_path, ["-n", "2", "python", str(prog)], _env())
    assert run.returncode == 2 and "never" not in run.stdout
    assert run.stderr.strip().splitlines() == [
        f"mcjax-guard: error: {tmp_path / 'pyproject.toml'}: unknown key 'devices_per_process' in [tool.mcjax.guard] "
        f"(did you mean 'devices-per-process'?)"]
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax.guard]\nmode = 'slow'\n")
    run = _guard(tmp_path, ["-n", "2", "python", str(prog)], _env())
    assert run.returncode == 2 and "'mode' in [tool.mcjax.guard] must be \"fast\" or \"strict\"" in run.stderr


def test_pytest_table_gives_the_marks_defaults(tmp_path):
    from mcjax_lint.config import ConfigError
    from runtime_guard.settings import PYTEST_TABLE, project_settings

    (tmp_path / "pyproject.toml").write_text("[tool.mcjax.pytest]\nprocesses = 3\ndevices-per-process = 2\ntimeout = 90\n")
    assert project_settings("pytest", PYTEST_TABLE, tmp_path) == {"processes": 3, "devices_per_process": 2,
                                                                  "timeout": 90.0}
    (tmp_path / "pyproject.toml").write_text("[tool.mcjax.pytest]\nprocess = 3\n")
    with pytest.raises(ConfigError, match=r"unknown key 'process' in \[tool.mcjax.pytest\] \(did you mean 'processes'\?\)"):
        project_settings("pytest", PYTEST_TABLE, tmp_path)


def test_version(tmp_path):
    from runtime_guard import __version__

    run = _guard(tmp_path, ["--version"], _env())
    assert run.returncode == 0 and run.stdout.strip() == f"mcjax-guard {__version__}"


# -- dump: only verified supervisors of this user, in a private run directory ----------------------


def test_dump_never_signals_a_pid_its_run_file_cannot_vouch_for(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    env = _env(MCJAX_RUN_DIR=str(run_dir))
    # A launcher killed with SIGKILL left its run file; the system gave its pid to a `sleep`.
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        (run_dir / f"{sleeper.pid}.json").write_text(json.dumps(
            {"pid": sleeper.pid, "start_time": 1, "report_dir": str(tmp_path), "started": time.time()}))
        by_pid = _guard(tmp_path, ["dump", "--pid", str(sleeper.pid), "--wait", "0"], env)
        assert by_pid.returncode == 1
        assert by_pid.stderr.strip() == (f"mcjax-guard dump: pid {sleeper.pid} is not a running mcjax-guard "
                                         f"supervisor of yours; nothing signalled")
        (run_dir / f"{sleeper.pid}.json").write_text(json.dumps({"pid": sleeper.pid, "report_dir": str(tmp_path)}))
        every = _guard(tmp_path, ["dump", "--wait", "0"], env)
        assert every.returncode == 1 and "no running guarded job" in every.stderr
        time.sleep(0.2)
        assert sleeper.poll() is None, "the unrelated process was signalled"  # SIGUSR1 would have ended it
        assert not list(run_dir.glob("*.json"))  # the stale run file is gone
        listed = _guard(tmp_path, ["dump", "--list"], env)
        assert listed.returncode == 0 and listed.stdout == ""
        assert listed.stderr.strip() == "mcjax-guard dump: no running guarded job"
    finally:
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait(timeout=10)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_run_directory_of_another_user_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    os.chown(run_dir, 12345, 12345)
    run = _guard(tmp_path, ["dump", "--list"], _env(MCJAX_RUN_DIR=str(run_dir)))
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        f"mcjax-guard dump: the run directory {run_dir} belongs to uid 12345, not to you (uid 0): remove it or set "
        f"MCJAX_RUN_DIR"]


def test_run_directory_is_private_to_its_user(tmp_path):
    from runtime_guard.report import runfile

    os.environ["MCJAX_RUN_DIR"] = str(tmp_path / "run")
    try:
        path = runfile.register_supervisor(tmp_path)
        assert (path.parent.stat().st_mode & 0o777) == 0o700 and (path.stat().st_mode & 0o777) == 0o600
        assert [s["pid"] for s in runfile.list_supervisors()] == [os.getpid()]  # verified: ours, same start
        os.chmod(path.parent, 0o755)
        runfile.list_supervisors()
        assert (path.parent.stat().st_mode & 0o777) == 0o700  # narrowed again
        link = tmp_path / "link"
        link.symlink_to(path.parent)
        os.environ["MCJAX_RUN_DIR"] = str(link)
        with pytest.raises(runfile.RunDirError, match="is not a directory"):
            runfile.list_supervisors()
    finally:
        os.environ.pop("MCJAX_RUN_DIR", None)


def test_launcher_values_reach_only_its_own_children():
    from runtime_guard.local_job import ADDR, BIND, ID, NUM, SUPERVISOR, initialize_args

    env = {NUM: "2", ID: "1", ADDR: "127.0.0.1:5", BIND: "127.0.0.1:5", SUPERVISOR: str(os.getppid())}
    said: list[str] = []
    got = initialize_args({"coordinator_address": "localhost:9", "process_id": 0}, env, warn=said.append)
    assert got == {"coordinator_address": "127.0.0.1:5", "num_processes": 2, "process_id": 1,
                   "coordinator_bind_address": "127.0.0.1:5"}
    assert said == ["mcjax-guard: the launcher overrides the program's jax.distributed.initialize("
                    "process_id=0, coordinator_address='localhost:9'): this is process 1 of 2, coordinator 127.0.0.1:5"]
    # A worker the program started itself (its parent is not the launcher): its own job.
    worker = dict(env, **{SUPERVISOR: str(os.getpid())})
    assert initialize_args({"coordinator_address": "localhost:9", "process_id": 3}, worker, warn=said.append) == {
        "coordinator_address": "localhost:9", "process_id": 3}
    assert len(said) == 1
