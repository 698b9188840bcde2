# A 2D field solver decomposed along y over the processes, with static load balancing: the
# --gridDist option gives each process its own number of cell rows.  The SliceFieldPrinter
# plugin cuts the field at a fixed x and gathers the slice pieces of all processes into one
# global line, written as the slice output.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GRID_X = 24
GRID_DIST = [20, 12]


class SubGrid:
    def __init__(self, rank, grid_dist):
        self.local_rows = grid_dist[rank]
        self.offset_y = sum(grid_dist[:rank])
        self.global_rows = sum(grid_dist)


class FieldE:
    def __init__(self, subgrid):
        y = (np.arange(subgrid.local_rows) + subgrid.offset_y)[:, None].astype(np.float32)
        x = np.arange(GRID_X)[None, :].astype(np.float32)
        self.data = np.sin(0.3 * x) * np.cos(0.2 * y)
        self._step = jax.jit(self._advance)

    @staticmethod
    def _advance(e, dt):
        lap = (jnp.roll(e, 1, 0) + jnp.roll(e, -1, 0) + jnp.roll(e, 1, 1) + jnp.roll(e, -1, 1)
               - 4.0 * e)
        return e + dt * lap

    def advance(self, dt=0.1):
        self.data = np.asarray(self._step(jnp.asarray(self.data), np.float32(dt)))


class Gather:
    def __call__(self, local):
        sizes = np.asarray(multihost_utils.process_allgather(np.int32(local.shape[0])))
        padded = np.zeros(int(sizes.max()), dtype=local.dtype)
        padded[:local.shape[0]] = local
        parts = np.asarray(multihost_utils.process_allgather(padded))
        return np.concatenate([p[:n] for p, n in zip(parts, sizes)], axis=0)


class SliceFieldPrinter:
    def __init__(self, subgrid, slice_x, period):
        self.subgrid, self.slice_x, self.period = subgrid, slice_x, period
        self.gather = Gather()
        self.outputs = []

    def notify(self, step, field):
        if step % self.period:
            return
        local_slice = np.ascontiguousarray(field.data[:, self.slice_x])
        global_slice = self.gather(local_slice)
        self.outputs.append((step, global_slice))


def main():
    rank = jax.process_index()
    subgrid = SubGrid(rank, GRID_DIST)
    field = FieldE(subgrid)
    printer = SliceFieldPrinter(subgrid, slice_x=7, period=5)
    for step in range(11):
        field.advance()
        printer.notify(step, field)
    step, last = printer.outputs[-1]
    print(f"rank {rank}: {len(printer.outputs)} slices, last at step {step}")
    print("RESULT slice_len", last.shape[0])
    print("RESULT slice_sum", round(float(last.sum()), 4))


if __name__ == "__main__":
    main()
