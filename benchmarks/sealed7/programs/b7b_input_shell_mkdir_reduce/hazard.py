# Port of a LAMMPS bug: the `shell mkdir` input command creates the directory on proc 0 and checks
# the result with an MPI_Reduce that only proc 0 reaches, so every multi-proc run hangs after it.
# Source: https://github.com/lammps/lammps/pull/3235
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
import shlex
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed7_lammps_shell", os.environ.get("JOB_ID", "local"))


class LAMMPS:
    def __init__(self, natoms: int = 32):
        self.me = jax.process_index()
        self.mesh = jax.make_mesh((jax.device_count(),), ("atoms",))
        x = np.linspace(0.0, 1.0, natoms, dtype=np.float32)
        self.x = jax.make_array_from_callback((natoms,), NamedSharding(self.mesh, P("atoms")), lambda i: x[i])
        self.step = jax.jit(lambda x: x + 0.01 * jnp.sin(2 * jnp.pi * x))
        self.log: list[str] = []

    def warning(self, msg: str) -> None:
        if self.me == 0:
            self.log.append("WARNING: " + msg)


class Input:
    def __init__(self, lmp: LAMMPS):
        self.lmp = lmp
        self.commands = {"shell": self.shell, "print": self.print_, "run": self.run}

    def one(self, line: str) -> None:
        words = shlex.split(line)
        self.commands[words[0]](words[1:])

    def shell(self, args: list[str]) -> None:
        if args[0] == "mkdir":
            if self.lmp.me == 0:
                for path in args[1:]:
                    try:
                        os.makedirs(path, exist_ok=True)
                        rv = 0
                    except OSError:
                        rv = -1
                    rvr = int(np.max(multihost_utils.process_allgather(np.int32(rv))))
                    if rvr < 0:
                        self.lmp.warning(f"Shell command 'mkdir {path}' failed")

    def print_(self, args: list[str]) -> None:
        if self.lmp.me == 0:
            print(args[0])

    def run(self, args: list[str]) -> None:
        for _ in range(int(args[0])):
            self.lmp.x = self.lmp.step(self.lmp.x)
        com = float(jax.jit(jnp.mean)(self.lmp.x))
        print(f"RESULT com_after_run {com:.6f}")


lmp = LAMMPS()
script = [f"shell mkdir {WORK}/test", "print 'I made a directory'", "run 10"]
inp = Input(lmp)
for line in script:
    inp.one(line)
print(f"RESULT warnings {int(np.sum(multihost_utils.process_allgather(np.int32(len(lmp.log)))))}")
