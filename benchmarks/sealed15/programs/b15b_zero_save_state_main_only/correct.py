# Fine-tuning with ZeRO-style sharded optimizer state: every process enters save_state for the periodic checkpoint
# Source: https://github.com/huggingface/accelerate/issues/1171
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
SHARDED = NamedSharding(MESH, P("dp"))
DIM, STEPS, CHECKPOINT_EVERY = 8, 6, 3


class Accelerator:
    def __init__(self, out_root):
        self.process_index = jax.process_index()
        self.is_main_process = self.process_index == 0
        self.out_root = out_root

    def prepare(self, params):
        # ZeRO stage 1/2: the Adam moments are partitioned across data-parallel ranks
        zeros = jnp.zeros((DIM,), jnp.float32)
        m = jax.device_put(zeros, SHARDED)
        v = jax.device_put(zeros, SHARDED)
        return params, (m, v)

    def save_state(self, step, params, opt_state):
        """Consolidates the partitioned optimizer state (a collective), then the main process writes it."""
        full = {name: np.asarray(multihost_utils.process_allgather(x, tiled=True))
                for name, x in zip(("exp_avg", "exp_avg_sq"), opt_state)}
        full["params"] = np.asarray(multihost_utils.process_allgather(params, tiled=True))
        if self.is_main_process:
            os.makedirs(self.out_root, exist_ok=True)
            with open(os.path.join(self.out_root, f"state_{step}.pkl"), "wb") as f:
                pickle.dump(full, f)
        return float(full["exp_avg_sq"].sum())


@jax.jit
def adam_step(params, m, v, x, y):
    grad = jax.grad(lambda p: jnp.mean((x @ p - y) ** 2))(params)
    m = 0.9 * m + 0.1 * grad
    v = 0.999 * v + 0.001 * grad ** 2
    params = params - 0.01 * m / (jnp.sqrt(v) + 1e-8)
    return params, m, v


def batch(step):
    rng = np.random.default_rng(step)
    x = rng.normal(size=(16, DIM)).astype(np.float32)
    return x, x @ np.linspace(-1, 1, DIM).astype(np.float32)


def main():
    job = os.environ.get("JOB_ID", "local")
    out_root = os.path.join(tempfile.gettempdir(), "mcjax_sealed15_zero_save_state", job)
    acc = Accelerator(out_root)
    params, (m, v) = acc.prepare(jnp.zeros((DIM,), jnp.float32))
    for step in range(1, STEPS + 1):
        x, y = batch(step)
        params, m, v = adam_step(params, m, v, x, y)
        if step % CHECKPOINT_EVERY == 0:
            norm = acc.save_state(step, params, (m, v))        # every rank: the consolidation is a collective
            if acc.is_main_process:
                print(f"checkpoint {step} exp_avg_sq sum {norm:.6f}")
    multihost_utils.sync_global_devices("training done")
    print("RESULT params", np.round(np.asarray(multihost_utils.process_allgather(params, tiled=True)), 4).tolist())


if __name__ == "__main__":
    main()
