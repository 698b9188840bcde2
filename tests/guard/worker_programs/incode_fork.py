"""An in-code `runtime_guard.install()` (no supervisor) in a program whose JAX processes fork.

usage: incode_fork.py MODE
- "workers": 2 JAX workers by multiprocessing's fork start method; each leaves through
  `os._exit` (as multiprocessing's fork children do); process 1 finishes first and process 0
  still works for a while after it (a correct program: nothing to report).
- "children": 2 JAX processes (subprocess) join a job; each forks a child after its first
  cross-process computation that leaves through `os._exit(7)` (a fork is not a process of the
  job), then goes on with more cross-process work; a thread holds the recorder's lock as it forks.
"""

import multiprocessing as mp
import os
import socket
import subprocess
import sys
import threading
import time

os.environ.update(JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1")

import runtime_guard  # noqa: E402

guard = runtime_guard.install()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def job(index: int, port: int):
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=index)
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones((1,), np.float32))
    return x, jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))


def worker(index: int, port: int) -> None:
    x, total = job(index, port)
    r = total(x)
    for _ in range(3):
        r = total(x * r)
    r.block_until_ready()
    if index == 0:
        time.sleep(8)  # process 1 left (os._exit) seconds ago: longer than a death takes to see
    print(index, "done", float(r), flush=True)


def forking(index: int, port: int) -> None:
    x, total = job(index, port)
    r = total(x).block_until_ready()
    held = threading.Event()
    release = threading.Event()

    def hold():  # as the exchange thread holds it while folding
        with guard.recorder.lock:
            held.set()
            release.wait()

    t = threading.Thread(target=hold)
    t.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        guard.recorder.lock.acquire()  # free in the child whatever the parent's threads held
        guard.recorder.lock.release()
        os._exit(7)
    release.set()
    t.join()
    _, status = os.waitpid(pid, 0)
    for _ in range(3):
        time.sleep(1)  # heartbeats go on: the child's exit said nothing in this process's name
        r = total(x * r)
    sys.stdout.write(f"{index} child {os.waitstatus_to_exitcode(status)} done {float(r)}\n")  # one write:
    sys.stdout.flush()  # the two processes share the pipe


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    if sys.argv[1] == "workers":
        port = free_port()
        ctx = mp.get_context("fork")
        procs = [ctx.Process(target=worker, args=(i, port)) for i in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        print("exit codes", [p.exitcode for p in procs], flush=True)
        sys.exit(max(abs(p.exitcode or 0) for p in procs))
    elif sys.argv[1] == "children":
        port = free_port()
        procs = [subprocess.Popen([sys.executable, __file__, "child-job", str(i), str(port)]) for i in range(2)]
        sys.exit(max(p.wait() for p in procs))
    else:  # child-job INDEX PORT
        forking(int(sys.argv[2]), int(sys.argv[3]))
