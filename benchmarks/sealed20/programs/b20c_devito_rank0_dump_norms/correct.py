# Acoustic wave-propagation benchmark in the style of Devito's benchmark.py: the grid is split into
# x-slabs over the processes, halos are exchanged every time step, and `run` can dump a performance
# summary and the norms of the output functions to files.
import os
import tempfile
import time
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DiscreteFunction:
    def __init__(self, name, data):
        self.name, self.data = name, data


@dataclass
class PerformanceSummary:
    points: int
    timesteps: int
    elapsed: float

    @property
    def globals(self):
        return {"fdlike": self.points * self.timesteps / max(self.elapsed, 1e-9) / 1e6}


def norm(f):
    """L2 norm of a distributed function: local sum of squares reduced over all processes."""
    local = np.float32(np.sum(f.data.astype(np.float64) ** 2))
    return float(np.sqrt(np.asarray(multihost_utils.process_allgather(local)).sum()))


class AcousticWaveSolver:
    def __init__(self, shape=(48, 48), spacing=10.0, vp=1.5, dt=2.0, nt=80, f0=0.015):
        self.shape, self.h, self.vp, self.dt, self.nt, self.f0 = shape, spacing, vp, dt, nt, f0
        self.rank, self.size = jax.process_index(), jax.process_count()
        bounds = np.linspace(0, shape[0], self.size + 1).astype(int)
        self.x0, self.x1 = bounds[self.rank], bounds[self.rank + 1]

    def ricker(self, t):
        r = (np.pi * self.f0 * (t - 1.0 / self.f0)) ** 2
        return (1 - 2 * r) * np.exp(-r)

    def exchange_halos(self, u):
        edges = np.stack([u[0], u[-1]]).astype(np.float32)
        allx = np.asarray(multihost_utils.process_allgather(edges))
        lo = allx[self.rank - 1, 1] if self.rank > 0 else np.zeros(u.shape[1], np.float32)
        hi = allx[self.rank + 1, 0] if self.rank < self.size - 1 else np.zeros(u.shape[1], np.float32)
        return np.vstack([lo, u, hi])

    def forward(self, autotune=False):
        nx, ny = self.shape
        u_prev = np.zeros((self.x1 - self.x0, ny), np.float32)
        u = np.zeros_like(u_prev)
        rec = np.zeros((self.nt, ny // 4), np.float32)
        src = (nx // 3, ny // 2)
        c2 = (self.vp * self.dt / self.h) ** 2
        start = time.perf_counter()
        for n in range(self.nt):
            p = np.pad(self.exchange_halos(u), ((0, 0), (1, 1)))
            lap = p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2] - 4 * p[1:-1, 1:-1]
            u_next = 2 * u - u_prev + c2 * lap
            if self.x0 <= src[0] < self.x1:
                u_next[src[0] - self.x0, src[1]] += self.dt ** 2 * self.ricker(n * self.dt)
            if self.x0 <= 2 < self.x1:
                rec[n] = u_next[2 - self.x0, ::4]
            u_prev, u = u, u_next
        summary = PerformanceSummary(nx * ny, self.nt, time.perf_counter() - start)
        return DiscreteFunction("rec", rec), DiscreteFunction("u", u), summary


def run(problem="acoustic", **kwargs):
    solver = AcousticWaveSolver()
    retval = solver.forward(autotune=kwargs.pop("autotune", False))
    rank = jax.process_index()

    dumpfile = kwargs.pop("dump_summary")
    if dumpfile:
        if rank == 0:
            with open(dumpfile, "w") as f:
                summary = retval[-1]
                assert isinstance(summary, PerformanceSummary)
                f.write(str(summary.globals["fdlike"]))

    dumpfile = kwargs.pop("dump_norms")
    if dumpfile:
        norms = ["'%s': %f" % (i.name, norm(i)) for i in retval[:-1]
                 if isinstance(i, DiscreteFunction)]
        if rank == 0:
            with open(dumpfile, "w") as f:
                f.write("{%s}" % ", ".join(norms))
    return retval


def main():
    outdir = tempfile.mkdtemp(prefix="devito-bench-")
    rec, u, summary = run("acoustic", dump_summary=os.path.join(outdir, "summary.txt"),
                          dump_norms=os.path.join(outdir, "norms.txt"))
    print("RESULT rec_norm", round(norm(rec), 5))
    print("RESULT u_norm", round(norm(u), 5))
    print("RESULT points", summary.points * summary.timesteps)


if __name__ == "__main__":
    main()
