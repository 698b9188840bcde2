# NorMuon-style optimizer: orthogonalized updates are computed per owned matrix, then all-gathered; a non-finite step is skipped by all ranks
# Source: https://github.com/microsoft/dion/pull/79
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM, STEPS, LR, BETA, GATE_WARMUP = 6, 8, 0.02, 0.9, 1


def newton_schulz(g, iters=5):
    """Quintic Newton-Schulz orthogonalization (as in Muon)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g / jnp.linalg.norm(g)
    for _ in range(iters):
        s = x @ x.T
        x = a * x + (b * s + c * s @ s) @ x
    return x


def loss_fn(params, x, gate):
    h = jnp.tanh(x @ params[0]) + gate * jnp.tanh(x @ params[1])
    return jnp.mean((h - x) ** 2)


class NorMuon:
    def __init__(self, n_matrices, rank, world, nan_guard_fallback=True):
        self.owned = [i for i in range(n_matrices) if i % world == rank]
        self.momentum = [np.zeros((DIM, DIM), np.float32) for _ in range(n_matrices)]
        self.nan_guard_fallback = nan_guard_fallback
        self.skipped = 0
        self.ortho = jax.jit(newton_schulz)

    def step(self, params, grads):
        self.momentum = [BETA * m + g for m, g in zip(self.momentum, grads)]
        local_updates = np.stack([np.asarray(self.ortho(self.momentum[i])) for i in self.owned])
        if self.nan_guard_fallback:
            local_flag = np.array([0 if np.isfinite(local_updates).all() else 1], np.int32)
            # all ranks agree on skipping (all_reduce MAX of the local flag)
            nonfinite = bool(np.asarray(multihost_utils.process_allgather(local_flag)).max())
            if nonfinite:
                self.skipped += 1
                return params
        gathered = np.asarray(multihost_utils.process_allgather(local_updates))
        updates = {i: gathered[i % gathered.shape[0], i // gathered.shape[0]] for i in range(len(params))}
        return [p - LR * updates[i] for i, p in enumerate(params)]


def main():
    rank, world = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    init_rng = np.random.default_rng(0)
    params = [init_rng.normal(size=(DIM, DIM)).astype(np.float32) * 0.3 for _ in range(2)]
    data = np.random.default_rng(10 + rank).normal(size=(STEPS, 8, DIM)).astype(np.float32)
    grad_fn = jax.jit(jax.grad(loss_fn))
    allreduce_mean = jax.jit(lambda g: jnp.mean(g, axis=0), out_shardings=NamedSharding(mesh, P()))
    opt = NorMuon(len(params), rank, world)
    for step in range(STEPS):
        gate = 0.0 if step < GATE_WARMUP else 1.0
        local = grad_fn(params, data[step], gate)
        grads = []
        for g in local:
            stacked = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), np.asarray(g)[None])
            grads.append(np.asarray(allreduce_mean(stacked).addressable_shards[0].data))
        params = opt.step(params, grads)
    print("RESULT skipped_steps", opt.skipped)
    print("RESULT param_norms", [round(float(np.linalg.norm(p)), 4) for p in params])


if __name__ == "__main__":
    main()
