# SIGINT reaches one worker: the abort intent is all-gathered at the step boundary, so every worker aborts together
# Source: https://github.com/bytedance/jaqmc/issues/94
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import pickle
import signal
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("walkers",))
WALKERS = NamedSharding(MESH, P("walkers"))
SAVE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_stageabort", os.environ.get("JOB_ID", "local"))


class GracefulKiller:
    def __init__(self):
        self.exit_requested = False
        signal.signal(signal.SIGINT, self._request_exit)

    def _request_exit(self, signum, frame):
        self.exit_requested = True


class StageAbort(Exception):
    def __init__(self, step: int):
        super().__init__(f"stage aborted at step {step}")
        self.step = step


class Checkpointer:
    def save(self, stage: str, step: int, walkers) -> None:
        gathered = np.asarray(multihost_utils.process_allgather(walkers, tiled=True))
        if jax.process_index() == 0:
            os.makedirs(SAVE_DIR, exist_ok=True)
            with open(os.path.join(SAVE_DIR, f"{stage}_{step:06d}.pkl"), "wb") as f:
                pickle.dump({"step": step, "walkers": gathered}, f)


@jax.jit
def mcmc_step(walkers, key):
    proposal = walkers + 0.1 * jax.random.normal(key, walkers.shape)
    energy = jnp.mean(0.5 * jnp.sum(proposal ** 2, axis=-1))  # cross-process mean over all walkers
    return proposal * 0.99, energy


def _cluster_signals_one_worker(step: int) -> None:
    # stand-in for a scheduler / user interrupting a single worker (kill -INT <pid>)
    if step == 3 and jax.process_index() == 1:
        os.kill(os.getpid(), signal.SIGINT)


class Stage:
    def __init__(self, name: str, killer: GracefulKiller, ckpt: Checkpointer, save_interval: int = 1000):
        self.name, self.killer, self.ckpt, self.save_interval = name, killer, ckpt, save_interval
        self.walkers = None

    def _should_abort(self) -> bool:
        flags = multihost_utils.process_allgather(np.int32(self.killer.exit_requested))
        return bool(np.max(flags))

    def run(self, walkers, num_steps: int):
        key = jax.random.PRNGKey(0)
        self.walkers = walkers
        for step in range(1, num_steps + 1):
            key, sub = jax.random.split(key)
            self.walkers, energy = mcmc_step(self.walkers, sub)
            _cluster_signals_one_worker(step)
            if self._should_abort():
                raise StageAbort(step)
            if step % self.save_interval == 0:
                self.ckpt.save(self.name, step, self.walkers)
        return float(energy)


def run_workflow() -> None:
    killer, ckpt = GracefulKiller(), Checkpointer()
    walkers = jax.make_array_from_process_local_data(WALKERS, np.ones((16, 3), np.float32))
    stage = Stage("vmc", killer, ckpt)
    try:
        energy = stage.run(walkers, num_steps=10)
        print("RESULT finished energy", round(energy, 4))
    except StageAbort as abort:
        ckpt.save(stage.name, abort.step, stage.walkers)
        print("RESULT aborted_at", abort.step)
    total = multihost_utils.process_allgather(stage.walkers, tiled=True)
    print("RESULT walkers_sum", round(float(np.sum(total)), 3))


run_workflow()
