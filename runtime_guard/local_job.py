"""What `mcjax-guard -n N` gives each local process, and how the process honours it.

Launcher side (`job_env`): the environment of process i — who it is (`MCJAX_*`), the loopback
coordinator (which process 0 binds to 127.0.0.1 only, through `initialize_args`), its CPU devices (the
caller's `JAX_NUM_CPU_DEVICES` or `XLA_FLAGS` device count unless `--devices-per-process` says
otherwise; else `DEFAULT_DEVICES`), and its own `PYTHONHASHSEED` (separate hosts hash strings
differently; a seed shared by every process would hide hash-order bugs).

Process side (`initialize_args`): the arguments `jax.distributed.initialize()` runs with. The
launcher's values win over the program's own (a script written for one host that passes
`process_id=0` would otherwise make every process claim id 0 and die in JAX's start-up), with
one warning line naming `initialize()`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

# Devices per process when neither the flag nor the environment says: a real host has several
# (two hazards of the fixtures need a process with more than one device to show at all).
DEFAULT_DEVICES = 2
_XLA_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")
HASH_SEED_MAX = 4294967295  # PYTHONHASHSEED's range is 0..2**32-1

NUM, ID, ADDR, BIND = "MCJAX_NUM_PROCESSES", "MCJAX_PROCESS_ID", "MCJAX_COORDINATOR_ADDRESS", "MCJAX_COORDINATOR_BIND"
SUPERVISOR = "MCJAX_SUPERVISOR_PID"  # the launcher's pid: its children are the job's processes


class LaunchError(ValueError):
    """A launcher setting or environment value that cannot work (one line)."""


def devices_per_process(flag: int | None, environ: Mapping[str, str]) -> tuple[int, str]:
    """(CPU devices each process gets, where that number comes from): the flag, else the caller's
    `JAX_NUM_CPU_DEVICES` (JAX's own setting, which wins over the XLA flag), else `XLA_FLAGS`'
    `--xla_force_host_platform_device_count`, else DEFAULT_DEVICES."""
    if flag is not None:
        if flag < 1:
            raise LaunchError(f"--devices-per-process must be at least 1, not {flag}")
        return flag, "--devices-per-process"
    raw = environ.get("JAX_NUM_CPU_DEVICES", "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            raise LaunchError(f"JAX_NUM_CPU_DEVICES={raw!r} is not a number") from None
        if n >= 1:
            return n, "JAX_NUM_CPU_DEVICES"
    m = _XLA_COUNT.search(environ.get("XLA_FLAGS", ""))
    if m and int(m.group(1)) >= 1:
        return int(m.group(1)), "XLA_FLAGS"
    return DEFAULT_DEVICES, "default"


def hash_seed(index: int, caller: str | None, keep: bool) -> str | None:
    """Process `index`'s PYTHONHASHSEED (None: leave it unset, Python picks a random one per
    process). A caller's fixed seed S becomes S + index, so runs stay reproducible while the
    processes hash strings differently, as separate hosts do; `keep` gives everyone S."""
    if caller is None or keep or caller == "random":
        return caller
    try:
        seed = int(caller)
    except ValueError:
        return caller  # Python itself will reject it, with its own message
    return str((seed + index) % (HASH_SEED_MAX + 1))


def job_env(base: Mapping[str, str], index: int, n: int, port: int, devices: tuple[int, str],
            collective_timeout: float, keep_hash_seed: bool = False) -> dict[str, str]:
    """The environment of local process `index` of `n` (coordinator on 127.0.0.1:`port`)."""
    env = dict(base)
    addr = f"127.0.0.1:{port}"
    env.update({NUM: str(n), ID: str(index), ADDR: addr, BIND: addr, SUPERVISOR: str(os.getpid()),
                # JAX reads it itself. The bind address goes through initialize()'s argument
                # (initialize_args), not JAX_COORDINATOR_BIND_ADDRESS: workers the program starts
                # with a job of their own inherit the environment and must bind where they say.
                "JAX_COORDINATOR_ADDRESS": addr, "JAX_PLATFORMS": "cpu"})
    count, source = devices
    if source != "XLA_FLAGS":  # JAX_NUM_CPU_DEVICES wins over the XLA flag: set it unless the flag decides
        env["JAX_NUM_CPU_DEVICES"] = str(count)
    flag = f"--xla_cpu_collective_timeout_seconds={int(collective_timeout)}"
    if "xla_cpu_collective_timeout_seconds" not in env.get("XLA_FLAGS", ""):
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    seed = hash_seed(index, base.get("PYTHONHASHSEED"), keep_hash_seed)
    if seed is None:
        env.pop("PYTHONHASHSEED", None)
    else:
        env["PYTHONHASHSEED"] = seed
    return env


_NAMES = ("coordinator_address", "num_processes", "process_id")


def initialize_args(kwargs: dict[str, Any], environ: Mapping[str, str] | None = None,
                    warn: Any = None) -> dict[str, Any]:
    """`jax.distributed.initialize`'s keyword arguments in a process the launcher started: the
    launcher's process count, id, coordinator and (with `-n`) loopback bind address. A value the
    program passed that differs is overridden, with one line on stderr saying so."""
    env = os.environ if environ is None else environ
    if env.get(SUPERVISOR) and env[SUPERVISOR] != str(os.getppid()):
        return kwargs  # a worker the program started itself (a harness): its own job, its own arguments
    want: dict[str, Any] = {}
    if env.get(NUM):
        want["num_processes"] = int(env[NUM])
    if env.get(ID):
        want["process_id"] = int(env[ID])
    if env.get(ADDR):
        want["coordinator_address"] = env[ADDR]
    if env.get(BIND):
        want["coordinator_bind_address"] = env[BIND]
    overridden = []
    for name, value in want.items():
        given = kwargs.get(name)
        if given is not None and given != value:
            overridden.append(f"{name}={given!r}")
        kwargs[name] = value
    if overridden:
        who = (f"process {want['process_id']} of {want['num_processes']}" if "process_id" in want and "num_processes" in want
               else ", ".join(f"{k}={want[k]!r}" for k in _NAMES if k in want))
        at = f", coordinator {want['coordinator_address']}" if "coordinator_address" in want else ""
        line = (f"mcjax-guard: the launcher overrides the program's jax.distributed.initialize"
                f"({', '.join(overridden)}): this is {who}{at}")
        (warn or (lambda s: print(s, file=sys.stderr, flush=True)))(line)
    return kwargs


def _endpoint(addr: str) -> tuple[str, str]:
    host, _, port = addr.rpartition(":")
    host = host.strip("[]").lower()
    return ("loopback" if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "") else host), port


def separate_job(coordinator: str, environ: Mapping[str, str] | None = None) -> bool:
    """Is this process one of the program's own workers, below a process that `mcjax-guard -n N`
    started, that joined a job of its own (another coordinator than the launch's)? With -n, each
    of the N copies of such a program (a test harness) starts a separate job: N jobs whose
    processes share indices, which one supervisor cannot tell apart."""
    env = os.environ if environ is None else environ
    launch = env.get(ADDR)
    if not (launch and env.get(SUPERVISOR)) or env[SUPERVISOR] == str(os.getppid()):
        return False  # not below an -n launch, or one of the launch's own processes
    return bool(coordinator) and _endpoint(coordinator) != _endpoint(launch)


def separate_job_line(notes: list[dict], processes: int, program: str) -> str:
    """The one line a supervisor says when `separate_job` notes came in (see there)."""
    n = notes[0]
    return (f"mcjax-guard: the program starts its own JAX jobs (pid {n.get('pid')} joined one as process "
            f"{n.get('p')} of {n.get('n')}, coordinator {n.get('coordinator')}): with -n {processes} each of the "
            f"{processes} copies starts a separate job, which the guard does not check; run it once without -n: "
            f"mcjax-guard {program}")


NO_CLUSTER = ("mcjax-guard: jax.distributed.initialize() found no cluster and no coordinator address: use -n N "
              "to start N local processes, or run under Slurm/Open MPI/a TPU pod/Kubernetes (or set "
              "JAX_COORDINATOR_ADDRESS and pass num_processes and process_id)")


def is_no_cluster_error(e: BaseException, environ: Mapping[str, str] | None = None) -> bool:
    """JAX's `ValueError: coordinator_address should be defined.` in a process that `mcjax-guard`
    wraps without `-n`: a usage problem, told in one line (NO_CLUSTER) instead of a traceback."""
    env = os.environ if environ is None else environ
    return (isinstance(e, ValueError) and str(e).startswith("coordinator_address should be defined")
            and bool(env.get("MCJAX_SUPERVISED")) and not env.get(ADDR))
