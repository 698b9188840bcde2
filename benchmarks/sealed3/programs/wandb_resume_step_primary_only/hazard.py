# On resume, only the primary's W&B run knows it is ahead; it skips stale metrics before materializing them
# Source: https://github.com/marin-community/marin/pull/5415
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import json
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
RUN_ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_wbresume", os.environ.get("JOB_ID", "local"))
CKPT = os.path.join(RUN_ROOT, "checkpoints", "step-4.pkl")
PRIMARY_RUN_DIR = os.path.join(RUN_ROOT, "wandb", "run-host0")


def _previous_attempt_left_behind() -> None:
    # The killed attempt checkpointed at step 4 but had already logged up to step 7 to W&B.
    if jax.process_index() == 0:
        os.makedirs(os.path.dirname(CKPT), exist_ok=True)
        with open(CKPT, "wb") as f:
            pickle.dump({"step": 4, "w": np.full((4, 1), 0.25, np.float32)}, f)
        os.makedirs(PRIMARY_RUN_DIR, exist_ok=True)
        with open(os.path.join(PRIMARY_RUN_DIR, "wandb-summary.json"), "w") as f:
            json.dump({"_step": 7}, f)
    multihost_utils.sync_global_devices("previous_attempt")


@jax.jit
def reduce_metric(v):
    return jnp.mean(v)


class WandbTracker:
    """W&B writes are primary-only; non-primary hosts run in disabled mode."""

    def __init__(self):
        self.is_primary = jax.process_index() == 0
        self.rows = []
        self.last_step = self._resumed_step()

    def _resumed_step(self) -> int:
        if not self.is_primary:
            return -1  # disabled run: nothing to resume
        with open(os.path.join(PRIMARY_RUN_DIR, "wandb-summary.json")) as f:
            return int(json.load(f)["_step"])

    def log(self, metrics: dict, step: int) -> None:
        if step <= self.last_step:
            return  # W&B would drop a step it has already seen
        values = {k: float(reduce_metric(v)) for k, v in metrics.items()}
        self.last_step = step
        if self.is_primary:
            self.rows.append({"_step": step, **values})


@jax.jit
def train_step(w, x, y):
    per_example = jnp.mean((x @ w - y) ** 2, axis=1)
    g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, per_example


def main() -> None:
    _previous_attempt_left_behind()
    with open(CKPT, "rb") as f:
        ckpt = pickle.load(f)
    w = jax.make_array_from_process_local_data(REPL, ckpt["w"])
    tracker = WandbTracker()
    rng = np.random.default_rng(21 + jax.process_index())
    for step in range(ckpt["step"] + 1, 12):
        x = jax.make_array_from_process_local_data(DATA, rng.normal(size=(8, 4)).astype(np.float32))
        y = jax.make_array_from_process_local_data(DATA, np.ones((8, 1), np.float32))
        w, per_example = train_step(w, x, y)
        tracker.log({"train/loss": per_example, "train/max_w": w}, step=step)
    print("RESULT last_logged_step", tracker.last_step)
    print("RESULT w", np.round(np.asarray(multihost_utils.process_allgather(w, tiled=True)).ravel(), 4).tolist())


main()
