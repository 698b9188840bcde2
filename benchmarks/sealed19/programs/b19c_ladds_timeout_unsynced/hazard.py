# Space-debris simulation with an altitude-based domain decomposition and a wall-clock timeout (LADDS style, ported to JAX)
# Source: https://github.com/esa/LADDS/issues/143
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import time

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"sim/iterations": 1_000_000, "sim/deltaT": 10.0, "sim/timeout/seconds": 2,
          "shells_km": [(200.0, 2000.0), (2000.0, 40000.0)], "catalogue_size": {0: 6000, 1: 400}}
R_EARTH = 6371.0
MU = 398600.4418


class Timer:
    def __init__(self):
        self._start, self.total = None, 0.0

    def start(self):
        self._start = time.perf_counter()

    def stop(self):
        self.total += time.perf_counter() - self._start


def load_shell_satellites(rank, config):
    """Each rank reads the objects of its altitude shell and propagates them to the simulation epoch."""
    lo, hi = config["shells_km"][rank]
    n = config["catalogue_size"][rank]
    rng = np.random.default_rng(2024 + rank)
    radius = R_EARTH + rng.uniform(lo, hi, size=n)
    phase = rng.uniform(0.0, 2.0 * np.pi, size=n)
    omega = np.sqrt(MU / radius ** 3)
    for _ in range(60):  # Kepler propagation to epoch, one orbit segment at a time
        phase = np.mod(phase + omega * 60.0, 2.0 * np.pi)
        for i in range(n):
            phase[i] = phase[i] + 1e-9 * np.sin(phase[i])
    return radius, phase, omega


def communicate_particles(leaving):
    return np.asarray(multihost_utils.process_allgather(np.array([leaving], dtype=np.int64))).sum()


def print_num_particles_per_rank(n_local):
    counts = np.asarray(multihost_utils.process_allgather(np.array([n_local], dtype=np.int64))).ravel()
    return counts.tolist()


class Simulation:
    def __init__(self, config):
        self.config = config
        self.init_timer = Timer()
        self.simulation_timer = Timer()

    def simulation_loop(self, radius, phase, omega, rank):
        timeout = self.config["sim/timeout/seconds"]
        last_iteration = self.config["sim/iterations"]
        migrated, iteration = 0, 0
        while iteration < last_iteration:
            iteration += 1
            phase = np.mod(phase + omega * self.config["sim/deltaT"], 2.0 * np.pi)
            leaving = int(np.count_nonzero(np.abs(np.sin(phase)) < 1e-3))
            migrated += int(communicate_particles(leaving))
            if timeout != 0:
                self.simulation_timer.stop()
                self.simulation_timer.start()
                seconds_since_start = int(self.simulation_timer.total)
                if seconds_since_start > timeout:
                    print(f"Simulation timeout hit! Time since simulation start ({seconds_since_start} s) "
                          f"> Timeout ({timeout} s)", flush=True)
                    self.config["sim/iterations"] = iteration
                    break
        return migrated

    def run(self, rank):
        self.init_timer.start()
        radius, phase, omega = load_shell_satellites(rank, self.config)
        self.init_timer.stop()
        self.simulation_timer.start()
        migrated = self.simulation_loop(radius, phase, omega, rank)
        self.simulation_timer.stop()
        per_rank = print_num_particles_per_rank(len(radius))
        return migrated, per_rank


def main():
    rank = jax.process_index()
    sim = Simulation(dict(CONFIG))
    migrated, per_rank = sim.run(rank)
    print("RESULT particles_per_rank", per_rank)
    print("RESULT completed_iterations", sim.config["sim/iterations"])
    print("RESULT migrated_total", migrated)


if __name__ == "__main__":
    main()
