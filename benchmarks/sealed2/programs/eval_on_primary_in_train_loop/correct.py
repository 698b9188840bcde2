# Periodic evaluation in the training loop: every process evaluates, only process 0 reports and saves
# Source: https://github.com/google/orbax/issues/211
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
EVAL_INTERVAL = 3
NUM_STEPS = 8
LOCAL_BATCH = 4


def get_batch(split: str, step: int) -> jax.Array:
    rng = np.random.default_rng(1000 * (split == "val") + 10 * step + jax.process_index())
    local = rng.normal(size=(LOCAL_BATCH, 6)).astype(np.float32)
    return jax.make_array_from_process_local_data(DATA, local)


@jax.jit
def train_step(params, x):
    def loss_fn(p):
        return jnp.mean((x @ p["w"] + p["b"]) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


@jax.jit
def eval_step(params, x):
    return jnp.mean((x @ params["w"] + params["b"]) ** 2)


def evaluate(params) -> float:
    losses = [eval_step(params, get_batch("val", i)) for i in range(2)]
    return float(jnp.mean(jnp.stack(losses)))


params = jax.device_put({"w": jnp.ones((6, 3)) * 0.5, "b": jnp.zeros((3,))}, REPL)
best_eval = float("inf")
history = []
for iter_num in range(NUM_STEPS):
    params, loss = train_step(params, get_batch("train", iter_num))
    if iter_num % EVAL_INTERVAL == 0:
        val_loss = evaluate(params)
        history.append(round(val_loss, 4))
        if val_loss < best_eval:
            best_eval = val_loss
            if jax.process_index() == 0:
                print("saving model", flush=True)

print("RESULT", round(float(loss), 4), round(float(jnp.sum(params["w"])), 4))
