# MD wrapper parses the thermo output of each run on every process, but the output is only captured on process 0
# Source: https://github.com/lammps/lammps/issues/1069
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import io
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"atoms_per_rank": 64, "dt": 0.005, "thermo_every": 10, "log_bytes": 4096}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def allreduce(values):
    local = np.asarray(values, np.float64)[None, :]
    glob = jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)
    return np.asarray(_sum(glob))


class Lammps:
    """A tiny harmonic-well MD engine; like LAMMPS, only proc 0 writes the screen/thermo output."""

    def __init__(self, rank):
        self.me = rank
        rng = np.random.default_rng(7 + rank)
        self.x = rng.normal(0.0, 1.0, (CFG["atoms_per_rank"], 3))
        self.v = rng.normal(0.0, 1.0, (CFG["atoms_per_rank"], 3))
        self.step = 0

    def thermo(self):
        ke, pe, n = allreduce([0.5 * np.sum(self.v ** 2), 0.5 * np.sum(self.x ** 2), self.x.shape[0]])
        return 2.0 * ke / (3.0 * n), pe / n

    def run(self, nsteps):
        screen = io.StringIO()
        if self.me == 0:
            screen.write("Step Temp PotEng\n")
        for _ in range(nsteps):
            self.v -= CFG["dt"] * self.x
            self.x += CFG["dt"] * self.v
            self.step += 1
            if self.step % CFG["thermo_every"] == 0:
                temp, pe = self.thermo()
                if self.me == 0:
                    screen.write(f"{self.step} {temp:.8f} {pe:.8f}\n")
        return screen.getvalue()


def get_thermo_data(output):
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Step"))
    rows = [list(map(float, line.split())) for line in lines[start + 1:]]
    return {"Step": [r[0] for r in rows], "Temp": [r[1] for r in rows], "PotEng": [r[2] for r in rows]}


class PyLammps:
    def __init__(self, lmp):
        self.lmp = lmp
        self.runs = []

    def run(self, nsteps):
        output = self.lmp.run(nsteps)
        self.runs.append(get_thermo_data(output))

    def velocity_scale(self, target):
        temp = self.runs[-1]["Temp"][-1]
        self.lmp.v *= np.sqrt(target / temp)


def main():
    L = PyLammps(Lammps(jax.process_index()))
    for stage, target in enumerate([1.0, 0.8, 0.6]):
        L.run(40)
        L.velocity_scale(target)
        temp, pe = L.lmp.thermo()
        print("RESULT stage", stage, "temp", round(temp, 6), "pe", round(pe, 6))
    print("RESULT runs", len(L.runs), "last_step", int(L.runs[-1]["Step"][-1]))


main()
