# Resilient SPMD iterative executor (heat transfer): checkpoint/restore on place failure, then step-time statistics
# Source: https://github.com/x10-lang/x10/pull/18
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import json
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_LOCAL = 128
MAX_ITERATIONS = 20
CHECKPOINT_INTERVAL = 4
KILL_AT_ITERATION = 6
RUN_DIR = os.path.join(tempfile.gettempdir(), "resilient_heat_" + os.environ.get("JOB_ID", "local"))
DEAD_PLACES_FILE = os.path.join(RUN_DIR, "dead_places.json")


@jax.jit
def jacobi_sweep(block):
    interior = 0.25 * (block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2] + block[1:-1, 2:])
    return block.at[1:-1, 1:-1].set(interior)


class HeatTransferApp:
    def __init__(self):
        rng = np.random.default_rng(1234 + jax.process_index())
        block = np.zeros((N_LOCAL, N_LOCAL), np.float32)
        block[0, :] = 1.0
        block[1:-1, 1:-1] = rng.random((N_LOCAL - 2, N_LOCAL - 2), dtype=np.float32) * 0.01
        self.block = jnp.asarray(block)
        self.ckpt = None

    def step(self):
        for _ in range(8):
            self.block = jacobi_sweep(self.block)
        self.block.block_until_ready()

    def checkpoint(self, iteration):
        self.ckpt = (iteration, np.asarray(self.block))

    def restore(self):
        iteration, saved = self.ckpt
        self.block = jnp.asarray(saved)
        return iteration


def dead_places():
    try:
        with open(DEAD_PLACES_FILE) as f:
            return set(json.load(f))
    except (OSError, ValueError):
        return set()


def kill_place(place):
    """Failure injection used by the resilience tests: run from place 0."""
    tmp = DEAD_PLACES_FILE + ".tmp"
    with open(tmp, "w") as f:
        json.dump([place], f)
    os.replace(tmp, DEAD_PLACES_FILE)


class SPMDResilientIterativeExecutor:
    def __init__(self, app):
        self.app = app
        self.step_times = []
        self.restores = 0

    def run(self):
        me = jax.process_index()
        known_dead = set()
        iteration = 0
        self.app.checkpoint(0)
        while iteration < MAX_ITERATIONS:
            t0 = time.perf_counter()
            self.app.step()
            self.step_times.append(time.perf_counter() - t0)
            iteration += 1
            if me == 0 and iteration == KILL_AT_ITERATION and self.restores == 0:
                kill_place(2)
            # place 0 gets the DeadPlaceException right away; others see it at their next checkpoint
            check_now = (me == 0 and iteration == KILL_AT_ITERATION) or iteration % CHECKPOINT_INTERVAL == 0
            if check_now:
                newly_dead = dead_places() - known_dead
                if newly_dead:
                    known_dead |= newly_dead
                    self.restores += 1
                    iteration = self.app.restore()
                elif iteration % CHECKPOINT_INTERVAL == 0:
                    self.app.checkpoint(iteration)
        return iteration

    def timing_statistics(self):
        counts = np.asarray(multihost_utils.process_allgather(np.int32(len(self.step_times))))
        n_common = int(counts.min())
        times = np.asarray(self.step_times[:n_common], np.float32)
        gathered = np.asarray(multihost_utils.process_allgather(times))
        return gathered.shape[1], float(gathered.min()), float(gathered.max()), float(gathered.sum() / gathered.shape[0])


def main():
    os.makedirs(RUN_DIR, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("places",))
    app = HeatTransferApp()
    executor = SPMDResilientIterativeExecutor(app)
    executor.run()
    n_steps, t_min, t_max, t_sum = executor.timing_statistics()
    print(f"step times over {n_steps} steps: min {t_min:.4f}s max {t_max:.4f}s total {t_sum:.4f}s", flush=True)
    field = jax.make_array_from_process_local_data(NamedSharding(mesh, P("places")), np.asarray(app.block))
    heat = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(field)
    print("RESULT steps_in_statistics", n_steps)
    print("RESULT total_heat", round(float(heat.addressable_shards[0].data), 3))


if __name__ == "__main__":
    main()
