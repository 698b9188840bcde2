# Distributed k-means random init: the owner of each sampled row broadcasts it; the other hosts pass a default-dtype placeholder
# Source: https://github.com/helmholtz-analytics/heat/pull/408
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class KMeansConfig:
    n_clusters: int = 3
    n_features: int = 4
    rows_per_process: int = 6
    max_iter: int = 5
    random_state: int = 42


def local_block(cfg, rank):
    """Row-split data, stored in half precision to save host memory."""
    rng = np.random.default_rng(100 + rank)
    centers = np.array([[0, 0, 0, 0], [5, 5, 0, 0], [0, 5, 5, 5]], np.float32)
    labels = rng.integers(0, cfg.n_clusters, size=cfg.rows_per_process)
    return (centers[labels] + 0.3 * rng.normal(size=(cfg.rows_per_process, cfg.n_features))).astype(np.float16)


def init_random_centroids(cfg, x_local):
    rank, nproc = jax.process_index(), jax.process_count()
    n_global = cfg.rows_per_process * nproc
    displ = [p * cfg.rows_per_process for p in range(nproc)]
    rng = np.random.default_rng(cfg.random_state)                    # same draws on every process
    centroids = []
    for i in range(cfg.n_clusters):
        lo, hi = n_global // cfg.n_clusters * i, n_global // cfg.n_clusters * (i + 1)
        sample = int(rng.integers(lo, hi))
        owner = max(p for p in range(nproc) if displ[p] <= sample)
        xi = np.zeros(cfg.n_features)
        if rank == owner:
            xi = x_local[sample - displ[owner]]
        xi = multihost_utils.broadcast_one_to_all(xi, is_source=(rank == owner))
        centroids.append(np.asarray(xi, np.float32))
    return np.stack(centroids)


@jax.jit
def lloyd_step(x, c):
    d = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    onehot = jax.nn.one_hot(jnp.argmin(d, axis=1), c.shape[0])
    counts = onehot.sum(axis=0)
    new_c = (onehot.T @ x) / jnp.maximum(counts, 1.0)[:, None]
    return jnp.where(counts[:, None] > 0, new_c, c), jnp.sum(jnp.min(d, axis=1))


def main():
    cfg = KMeansConfig()
    mesh = Mesh(np.array(jax.devices()), ("rows",))
    x_local = local_block(cfg, jax.process_index())
    c = init_random_centroids(cfg, x_local)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("rows")), x_local.astype(np.float32))
    c = jax.device_put(c, NamedSharding(mesh, P()))
    for _ in range(cfg.max_iter):
        c, inertia = lloyd_step(x, c)
    print("RESULT centroids", np.round(np.asarray(c), 3).tolist())
    print("RESULT inertia", round(float(inertia), 3))


if __name__ == "__main__":
    main()
