# Replica-exchange driver whose NaN check runs on each process's own replicas before the energy gather, and failures are caught per experiment
# Source: https://github.com/choderalab/yank/issues/798
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class SimulationNaNError(RuntimeError):
    pass


@dataclass
class Experiment:
    name: str
    timestep: float
    temperatures: list = field(default_factory=lambda: [1.0, 2.0, 4.0, 8.0])
    iterations: int = 4
    steps_per_iteration: int = 25


def force(x):
    return -4.0 * x ** 3


def potential(x):
    return np.sum(x ** 4, axis=-1)


class ReplicaExchange:
    def __init__(self, exp):
        self.exp = exp
        n_rep = len(exp.temperatures)
        per_proc = n_rep // jax.process_count()
        self.my_replicas = list(range(jax.process_index() * per_proc, (jax.process_index() + 1) * per_proc))
        self.state_of = list(range(n_rep))            # thermodynamic state held by each replica (replicated)
        self.x = {r: np.random.default_rng(r + 1).normal(size=4) * 0.5 for r in self.my_replicas}
        self.v = {r: np.random.default_rng(r + 1).normal(size=4) * np.sqrt(exp.temperatures[r]) for r in self.my_replicas}
        self.exchange_rng = np.random.default_rng(2024)

    def _propagate_replicas(self):
        dt = self.exp.timestep
        with np.errstate(all="ignore"):
            for r in self.my_replicas:
                x, v = self.x[r], self.v[r]
                for _ in range(self.exp.steps_per_iteration):
                    v = v + 0.5 * dt * force(x)
                    x = x + dt * v
                    v = v + 0.5 * dt * force(x)
                self.x[r], self.v[r] = x, v
        energies = np.array([potential(self.x[r]) for r in self.my_replicas], np.float32)
        if np.isnan(energies).any():
            raise SimulationNaNError(f"NaN in replicas {self.my_replicas} of {self.exp.name}")
        return np.asarray(multihost_utils.process_allgather(energies)).reshape(-1)

    def _mix_replicas(self, energies):
        temps = self.exp.temperatures
        for i in range(len(temps) - 1):
            a, b = self.state_of.index(i), self.state_of.index(i + 1)
            delta = (1.0 / temps[i] - 1.0 / temps[i + 1]) * (energies[a] - energies[b])
            if self.exchange_rng.random() < np.exp(min(0.0, -delta)):
                self.state_of[a], self.state_of[b] = i + 1, i

    def run(self):
        for _ in range(self.exp.iterations):
            energies = self._propagate_replicas()
            self._mix_replicas(energies)
        return float(np.mean(energies))


class ExperimentBuilder:
    def __init__(self, experiments):
        self.experiments = experiments
        self.failed, self.completed = [], {}

    def run_experiments(self):
        for exp in self.experiments:
            try:
                self.completed[exp.name] = round(ReplicaExchange(exp).run(), 4)
            except SimulationNaNError:
                self.failed.append(exp.name)   # collected; go on with the next experiment


def main():
    builder = ExperimentBuilder([Experiment("solvent", timestep=0.25), Experiment("complex", timestep=0.05)])
    builder.run_experiments()
    print("RESULT failed", builder.failed)
    print("RESULT completed", sorted(builder.completed.items()))


if __name__ == "__main__":
    main()
