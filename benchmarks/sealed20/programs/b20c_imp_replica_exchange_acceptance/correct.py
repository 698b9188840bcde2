# Temperature replica exchange (as in IMP's ReplicaExchange): each process runs one replica with
# Metropolis Monte Carlo on a double-well model and periodically tries to swap temperatures with
# its partner. Energies are exchanged with an all-gather so every replica can evaluate the move.
import math
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Config:
    temperatures: tuple = (0.6, 1.8)
    n_particles: int = 16
    steps: int = 400
    exchange_every: int = 20
    step_size: float = 0.4
    seed: int = 1234


def energy(x):
    return float(np.sum(x ** 4 - 2.0 * x ** 2 + 0.3 * x))


class ReplicaExchange:
    def __init__(self, cfg):
        self.cfg = cfg
        self.rank, self.size = jax.process_index(), jax.process_count()
        self.rng = np.random.default_rng(cfg.seed + self.rank)
        self.exchange_rng = np.random.default_rng(cfg.seed)
        self.temperatures = np.array(cfg.temperatures)
        self.state_of_replica = list(range(self.size))
        self.accepted = 0
        self.attempted = 0

    def my_temperature(self):
        return self.temperatures[self.state_of_replica[self.rank]]

    def get_energies(self, e_local):
        return np.asarray(multihost_utils.process_allgather(np.float32(e_local)), dtype=np.float64)

    def get_acceptance(self, e_i, e_j, t_i, t_j):
        delta = (1.0 / t_i - 1.0 / t_j) * (e_j - e_i)
        if delta <= 0:
            return True
        return self.exchange_rng.random() < math.exp(-delta)

    def try_exchange(self, e_local):
        energies = self.get_energies(e_local)
        i, j = 0, 1
        t_i = self.temperatures[self.state_of_replica[i]]
        t_j = self.temperatures[self.state_of_replica[j]]
        self.attempted += 1
        if self.get_acceptance(energies[i], energies[j], t_i, t_j):
            self.state_of_replica[i], self.state_of_replica[j] = self.state_of_replica[j], self.state_of_replica[i]
            self.accepted += 1


def metropolis_sweep(x, temperature, rng, step_size):
    for k in range(x.shape[0]):
        old = energy(x)
        saved = x[k]
        x[k] += rng.uniform(-step_size, step_size)
        if rng.random() >= math.exp(min(0.0, -(energy(x) - old) / temperature)):
            x[k] = saved
    return x


def main():
    cfg = Config()
    rex = ReplicaExchange(cfg)
    x = rex.rng.normal(0.0, 1.0, size=cfg.n_particles)
    for step in range(1, cfg.steps + 1):
        x = metropolis_sweep(x, rex.my_temperature(), rex.rng, cfg.step_size)
        if step % cfg.exchange_every == 0:
            rex.try_exchange(energy(x))

    final = rex.get_energies(energy(x))
    temps = multihost_utils.process_allgather(np.float32(rex.my_temperature()))
    print("RESULT exchanges", rex.accepted, "of", rex.attempted)
    print("RESULT state_of_replica", rex.state_of_replica)
    print("RESULT replica_temperatures", [round(float(t), 2) for t in np.asarray(temps)])
    print("RESULT final_energies", [round(float(e), 3) for e in final])


if __name__ == "__main__":
    main()
