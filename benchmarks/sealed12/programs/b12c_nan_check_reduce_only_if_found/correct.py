# Pipeline task base class whose NaN check reduces the NaN count across processes on every process
# Source: https://github.com/radiocosmology/draco/pull/233
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NFREQ_PER_PROC, NTIME = 4, 16
MESH = Mesh(np.array(jax.devices()), ("freq",))
FREQ = NamedSharding(MESH, P("freq", None))
PER_PROC = NamedSharding(MESH, P("freq"))
global_sum = jax.jit(jnp.sum)


def distributed(local):
    return jax.make_array_from_process_local_data(FREQ, np.ascontiguousarray(local, np.float32))


def local_part(arr):
    return np.asarray(arr.addressable_data(0))


class Task:
    nan_check = True

    def _nan_check(self, out):
        local = local_part(out)
        n_local = int(np.isnan(local).sum())
        # every process shares its count (zero or not) so the root can report it
        counts = jax.make_array_from_process_local_data(PER_PROC, np.array([n_local], np.float32))
        n_total = int(global_sum(counts))
        if n_total > 0:
            if jax.process_index() == 0:
                print(f"{type(self).__name__}: {n_total} NaNs in output")
            out = distributed(np.nan_to_num(local, nan=0.0))
        return out

    def next(self, data):
        out = self.process(data)
        return self._nan_check(out) if self.nan_check else out


class ApplyGains(Task):
    def process(self, vis):
        f0 = jax.process_index() * NFREQ_PER_PROC
        gains = 1.0 + 0.1 * np.arange(f0, f0 + NFREQ_PER_PROC)
        gains[np.arange(f0, f0 + NFREQ_PER_PROC) == 6] = 0.0      # a dead input in channel 6
        inverse = np.where(gains != 0.0, 1.0 / np.where(gains != 0.0, gains, 1.0), np.nan)   # dead input: NaN
        return distributed(local_part(vis) * inverse[:, None])


class SubtractMean(Task):
    def process(self, vis):
        return jax.jit(lambda v: v - jnp.mean(v, axis=0, keepdims=True))(vis)


class Stack(Task):
    def process(self, vis):
        return jax.jit(lambda v: jnp.sum(v * v, axis=1, keepdims=True))(vis)


def main():
    rng = np.random.default_rng(5 + jax.process_index())
    vis = distributed(rng.normal(size=(NFREQ_PER_PROC, NTIME)))
    for task in (ApplyGains(), SubtractMean(), Stack()):
        vis = task.next(vis)
    power = float(global_sum(vis))
    print("RESULT stacked_power", round(power, 3))
    print("RESULT nan_free", bool(np.isfinite(power)))


if __name__ == "__main__":
    main()
