"""A program that starts its own 2 JAX workers with `multiprocessing`.

usage: launch_multiprocessing.py MODE START_METHOD (MODE: hazard | clean, see worker.py;
START_METHOD: spawn | forkserver | fork)
"""

import multiprocessing as mp
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worker  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    os.environ.update(JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1")
    ctx = mp.get_context(sys.argv[2])
    port = free_port()
    procs = [ctx.Process(target=worker.run, args=(i, port, sys.argv[1])) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    sys.exit(max(p.exitcode or 0 for p in procs))
