# Driver loop bounded by wall time: each process reads its own wall clock, started when its Driver was built
# Source: https://github.com/IAS-Astrophysics/athenak/issues/572 (port of the AthenaK wall-clock loop hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("ranks",))


@dataclasses.dataclass
class TimeInput:
    tlim: float = 1e9
    nlim: int = -1
    wall_time: float = 2.0      # seconds
    cfl: float = 0.4


class WallClock:
    def __init__(self):
        self.start = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self.start


class MeshBlockPack:
    """This rank's mesh blocks; the initial refinement gives rank 1 many more blocks to set up."""

    def __init__(self, nblocks: int, ncells: int = 32):
        self.u = np.zeros((nblocks, ncells), np.float32)
        for b in range(nblocks):                       # problem generator: expensive per block
            x = np.linspace(0, 1, 20000)
            self.u[b] = np.interp(np.linspace(0, 1, ncells), x, np.sin(2 * np.pi * x) + 0.01 * b)

    def local_dt(self, cfl: float) -> float:
        return cfl / (1.0 + float(np.abs(self.u).max()))

    def update(self, dt: float):
        self.u = self.u - dt * 0.1 * (self.u - np.roll(self.u, 1, axis=1))
        time.sleep(0.03)


class Driver:
    def __init__(self, tin: TimeInput):
        self.tin = tin
        self.wall_clock = WallClock()
        self.time, self.ncycle, self.elapsed_time = 0.0, 0, 0.0
        self._min = jax.jit(jnp.min, out_shardings=NamedSharding(MESH, P()))

    def new_time_step(self, pack: MeshBlockPack) -> float:
        local = np.array([pack.local_dt(self.tin.cfl)], np.float32)
        return float(self._min(jax.make_array_from_process_local_data(NamedSharding(MESH, P("ranks")), local)))

    def update_wall_clock(self):
        self.elapsed_time = self.wall_clock.seconds()

    def execute(self, pack: MeshBlockPack):
        tin = self.tin
        while (self.time < tin.tlim and (self.ncycle < tin.nlim or tin.nlim < 0)
               and self.elapsed_time < tin.wall_time):
            dt = self.new_time_step(pack)
            pack.update(dt)
            self.time += dt
            self.ncycle += 1
            if tin.wall_time > 0:
                self.update_wall_clock()

    def finalize(self, pack: MeshBlockPack) -> float:
        totals = multihost_utils.process_allgather(np.array([pack.u.sum()], np.float32))
        return float(np.sum(totals))


def main():
    tin = TimeInput()
    pack = MeshBlockPack(nblocks=4 if jax.process_index() == 0 else 400)
    driver = Driver(tin)
    driver.execute(pack)
    total = driver.finalize(pack)
    print("RESULT cycles", driver.ncycle)
    print("RESULT total", round(total, 3))


if __name__ == "__main__":
    main()
