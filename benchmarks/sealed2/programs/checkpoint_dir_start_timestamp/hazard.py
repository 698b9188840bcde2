# The checkpoint directory embeds each process's own start timestamp; the save barrier is keyed by the path
# Source: https://github.com/p-doom/jasmine/pull/62
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import datetime
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
ARGS = {"name": "dynamics", "ckpt_root": os.path.join(tempfile.gettempdir(), "mcjax_sealed2_ckpt"),
        "log_checkpoint_interval": 2, "num_steps": 5}


class Checkpointer:
    """Each process writes its part, then all processes meet at a barrier named after the step directory."""

    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)

    def save(self, step: int, params: dict) -> None:
        step_dir = os.path.join(self.directory, f"step_{step:06d}")
        os.makedirs(step_dir, exist_ok=True)
        for name, value in params.items():
            np.save(os.path.join(step_dir, f"{name}.{jax.process_index()}.npy"), np.asarray(value.addressable_data(0)))
        multihost_utils.sync_global_devices(f"checkpoint_commit:{step_dir}")


@jax.jit
def train_step(params, x):
    grads = jax.grad(lambda p: jnp.mean((x @ p["w"]) ** 2 + p["b"] ** 2))(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


ts = datetime.datetime.now().isoformat(timespec="milliseconds")
ckpt_dir = os.path.join(ARGS["ckpt_root"], f"{ARGS['name']}_{ts}")
checkpointer = Checkpointer(ckpt_dir)
params = jax.device_put({"w": jnp.ones((3, 2)), "b": jnp.ones((2,))}, REPL)
rng = np.random.default_rng(jax.process_index())
for step in range(ARGS["num_steps"]):
    params = train_step(params, jax.make_array_from_process_local_data(DATA, rng.normal(size=(2, 3)).astype(np.float32)))
    if step % ARGS["log_checkpoint_interval"] == 0:
        checkpointer.save(step, params)

print("RESULT", round(float(jnp.sum(params["w"])), 4), round(float(jnp.sum(params["b"])), 4))
