# Monte Carlo atom-shake module: the clock seed is taken on process 0 and broadcast, so every process draws the same stream
# Source: https://github.com/disorderedmaterials/dissolve/pull/1211
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_ATOMS, N_SHAKES, STEP_SIZE, BETA = 16, 20, 0.1, 1.0


class Configuration:
    """Replicated atom positions; every process holds the full set and owns one half for the energy sum."""

    def __init__(self):
        grid = np.stack(np.meshgrid(np.arange(4.0), np.arange(4.0), indexing="ij"), -1).reshape(-1, 2)
        self.pos = (1.1 * grid).astype(np.float32)


def make_rng():
    seed = multihost_utils.broadcast_one_to_all(np.uint32(time.time_ns() % (2 ** 32)))
    seed = int(seed)
    return np.random.default_rng(seed)


@jax.jit
def pair_energy(own, all_pos):
    d2 = jnp.sum((own[:, None, :] - all_pos[None, :, :]) ** 2, axis=-1)
    lj = jnp.where(d2 > 1e-6, 4.0 * ((1.0 / d2) ** 6 - (1.0 / d2) ** 3), 0.0)
    return 0.5 * jnp.sum(lj)


class AtomShake:
    def __init__(self, cfg, rng, mesh):
        self.cfg, self.rng, self.accepted = cfg, rng, 0
        self.sharding = NamedSharding(mesh, P("atoms"))
        self.half = N_ATOMS // jax.process_count()

    def energy(self, pos):
        lo = jax.process_index() * self.half
        own = jax.make_array_from_process_local_data(self.sharding, pos[lo:lo + self.half])
        return float(pair_energy(own, jnp.asarray(pos)))

    def run(self):
        e_old = self.energy(self.cfg.pos)
        for _ in range(N_SHAKES):
            i = int(self.rng.integers(N_ATOMS))
            trial = self.cfg.pos.copy()
            trial[i] += self.rng.uniform(-STEP_SIZE, STEP_SIZE, size=2).astype(np.float32)
            e_new = self.energy(trial)
            if self.rng.uniform() < np.exp(-BETA * (e_new - e_old)):
                self.cfg.pos, e_old = trial, e_new
                self.accepted += 1
        return e_old


def main():
    mesh = Mesh(np.array(jax.devices()), ("atoms",))
    rng = make_rng()
    cfg = Configuration()
    shake = AtomShake(cfg, rng, mesh)
    energy = shake.run()
    print("RESULT accepted", shake.accepted)
    print("RESULT energy", round(energy, 4))
    print("RESULT positions_checksum", round(float(np.sum(cfg.pos * np.arange(1, 3))), 4))


if __name__ == "__main__":
    main()
