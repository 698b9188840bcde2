# 1D reacting-flow (autoignition-style) explicit time stepper on a domain split across ranks.
# Every `nhealth` steps a health check looks at the rank's own part of the solution; when the
# simulation is unhealthy the stepper stops and the crashed state is gathered and written out.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class SimulationHealthError(RuntimeError):
    def __init__(self, message, step, state):
        super().__init__(message)
        self.step, self.state = step, state


@dataclass
class SimConfig:
    n_local: int = 24
    n_steps: int = 200
    nhealth: int = 10
    dt: float = 1.0e-3
    conductivity: float = 0.2
    heat_release: float = 80.0
    activation_temp: float = 4.0
    max_temperature: float = 3.0


def initial_temperature(rank, cfg):
    x = (np.arange(cfg.n_local) + rank * cfg.n_local) / (2 * cfg.n_local)
    temp = 1.0 + 0.2 * np.sin(2 * np.pi * x)
    temp += 1.2 * np.exp(-((x - 0.8) / 0.05) ** 2)  # ignition kernel
    return jnp.asarray(temp, dtype=jnp.float32)


def exchange_halos(temp):
    """Each rank needs its neighbours' edge values (periodic domain)."""
    edges = np.asarray(multihost_utils.process_allgather(np.asarray([temp[0], temp[-1]])))
    rank, size = jax.process_index(), jax.process_count()
    return edges[(rank - 1) % size][1], edges[(rank + 1) % size][0]


@jax.jit
def rhs(temp, left, right, conductivity, heat_release, activation_temp):
    padded = jnp.concatenate([jnp.array([left]), temp, jnp.array([right])])
    lap = padded[:-2] - 2 * temp + padded[2:]
    return conductivity * lap * 100.0 + heat_release * jnp.exp(-activation_temp / temp)


def my_health_check(temp, cfg):
    temp = np.asarray(temp)
    return bool(np.isnan(temp).any() or temp.max() > cfg.max_temperature)


def advance_state(temp, cfg):
    for step in range(cfg.n_steps):
        if step % cfg.nhealth == 0:
            health_errors = my_health_check(temp, cfg)
            if health_errors:
                raise SimulationHealthError("Solution failed health check.", step, temp)
        left, right = exchange_halos(temp)
        temp = temp + cfg.dt * rhs(temp, left, right, cfg.conductivity, cfg.heat_release, cfg.activation_temp)
    return cfg.n_steps, temp


def write_visualization(temp, step, tag):
    full = np.asarray(multihost_utils.process_allgather(np.asarray(temp))).ravel()
    return {"tag": tag, "step": step, "max_temperature": round(float(full.max()), 4),
            "mean_temperature": round(float(full.mean()), 4)}


def main():
    cfg = SimConfig()
    rank = jax.process_index()
    temp = initial_temperature(rank, cfg)
    try:
        step, temp = advance_state(temp, cfg)
        viz = write_visualization(temp, step, "final")
    except SimulationHealthError as err:
        if rank == 0:
            print(f"step {err.step}: {err}; visualizing crashed state")
        viz = write_visualization(err.state, err.step, "crashed")
    print("RESULT status", viz["tag"])
    print("RESULT step", viz["step"])
    print("RESULT max_temperature", viz["max_temperature"])
    print("RESULT mean_temperature", viz["mean_temperature"])


if __name__ == "__main__":
    main()
