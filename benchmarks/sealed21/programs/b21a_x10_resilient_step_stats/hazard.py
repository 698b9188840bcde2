import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Team:
    MAX, MIN, ADD = np.max, np.min, np.sum

    def allreduce(self, values, op):
        return op(np.asarray(multihost_utils.process_allgather(np.asarray(values))), axis=0)


class PlaceManager:
    """Tracks the spare place that is lost during the run; each place learns of the loss on its own."""

    FAILED_AT_STEP = 6
    NOTICE_DELAY = (0, 2)  # steps until the death notification reaches each place

    def __init__(self, here):
        self.here = here
        self.handled = False

    def dead_place_noticed(self, step):
        return not self.handled and step >= self.FAILED_AT_STEP + self.NOTICE_DELAY[self.here]


class HeatStencilApp:
    def __init__(self, here, n=64):
        self.u = np.zeros(n, np.float32)
        self.u[n // 2 * here: n // 2 * here + 4] = 100.0
        self._step = jax.jit(lambda u: u + 0.2 * (jnp.roll(u, 1) + jnp.roll(u, -1) - 2.0 * u))

    def step(self):
        self.u = np.asarray(self._step(self.u))

    def checkpoint(self):
        return self.u.copy()

    def restore(self, state):
        self.u = state.copy()


class Stats:
    def __init__(self):
        self.stepTimes = []
        self.restoreTimes = []


class SPMDResilientIterativeExecutor:
    def __init__(self, checkpoint_interval=5):
        self.here = jax.process_index()
        self.team = Team()
        self.manager = PlaceManager(self.here)
        self.checkpoint_interval = checkpoint_interval
        self.stat = Stats()

    def run(self, app, max_steps=12):
        store, ckpt_step, step = app.checkpoint(), 0, 0
        while step < max_steps:
            if self.manager.dead_place_noticed(step):
                t0 = time.perf_counter()
                app.restore(store)
                step = ckpt_step
                self.manager.handled = True
                self.stat.restoreTimes.append(time.perf_counter() - t0)
                continue
            t0 = time.perf_counter()
            app.step()
            step += 1
            self.stat.stepTimes.append(time.perf_counter() - t0)
            if step % self.checkpoint_interval == 0:
                residual = self.team.allreduce(np.float32(np.abs(app.u).sum()), Team.ADD)
                store, ckpt_step = app.checkpoint(), step
                print(f"place {self.here}: checkpoint at step {step}, global heat {float(residual):.3f}")
        return self.statistics()

    def statistics(self):
        stpCount = len(self.stat.stepTimes)
        times = np.asarray(self.stat.stepTimes[:stpCount], np.float64)
        placeMaxStep = self.team.allreduce(times, Team.MAX)
        placeMinStep = self.team.allreduce(times, Team.MIN)
        placeSumStep = self.team.allreduce(times, Team.ADD)
        assert (placeMinStep <= placeMaxStep).all() and (placeSumStep >= placeMaxStep).all()
        return len(placeSumStep)


def main():
    executor = SPMDResilientIterativeExecutor()
    app = HeatStencilApp(jax.process_index())
    n_steps = executor.run(app)
    total = executor.team.allreduce(np.float32(app.u.sum()), Team.ADD)
    print("RESULT total_heat", round(float(total), 3))
    print("RESULT steps_in_statistics", n_steps)


if __name__ == "__main__":
    main()
