"""A program that starts its own 2 JAX workers with `subprocess` and `sys.executable`.

usage: launch_subprocess.py MODE (hazard | clean, see worker.py)
"""

import os
import socket
import subprocess
import sys

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    port = free_port()
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1")
    procs = [subprocess.Popen([sys.executable, WORKER, str(i), str(port), sys.argv[1]], env=env) for i in range(2)]
    sys.exit(max(p.wait() for p in procs))
