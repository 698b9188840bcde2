# Distributed mass-balance iteration with a hand-rolled all-reduce that sums peer blocks in one global order
# Source: https://github.com/openucx/ucc/pull/1145
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class BalanceConfig:
    max_iters: int = 6
    tol: float = 0.5
    relax: float = 0.5


def subdomain_fluxes(rank):
    """Two subdomains per process: a reservoir (large in/outflow) and small boundary leaks, float32."""
    if rank == 0:
        return np.array([[6e7, 4e7], [0.125, 0.125]], np.float32)
    return np.array([[-5e7, -5e7], [0.5, 0.5]], np.float32)


def knomial_allreduce(partials):
    """Sum every block of every process; blocks are visited in global block order on every process."""
    gathered = np.asarray(multihost_utils.process_allgather(partials)).reshape(-1)
    n, start = gathered.size, 0                                   # same canonical order everywhere
    total = np.float32(0.0)
    for k in range(n):
        total = np.float32(total + gathered[(start + k) % n])
    return total


@jax.jit
def relax_step(flux, imbalance, w):
    return flux - w * imbalance / flux.size


def balance(cfg, flux):
    history = []
    for it in range(cfg.max_iters):
        partials = flux.sum(axis=1).astype(np.float32)          # one partial per subdomain block
        imbalance = knomial_allreduce(partials)
        history.append(float(imbalance))
        if abs(imbalance) < cfg.tol:
            break
        flux = np.asarray(relax_step(jnp.asarray(flux), imbalance, cfg.relax))   # local subdomains only
    return it + 1, history


def main():
    cfg = BalanceConfig()
    iters, history = balance(cfg, subdomain_fluxes(jax.process_index()))
    multihost_utils.sync_global_devices("balance done")
    print("RESULT iterations", iters)
    print("RESULT imbalance_history", history)


if __name__ == "__main__":
    main()
