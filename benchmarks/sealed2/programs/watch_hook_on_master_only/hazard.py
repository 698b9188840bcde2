# The experiment tracker's watch() hook, enabled on the master process only, changes that process's train step
# Source: https://github.com/pytorch/xla/issues/1562
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())
is_master_ordinal = jax.process_index() == 0


def make_train_step(log_activations: bool):
    def forward(params, x):
        hidden = jax.nn.relu(x @ params["w1"])
        return hidden, hidden @ params["w2"]

    def step(params, x, y):
        def loss_fn(p):
            _, out = forward(p, x)
            return jnp.mean((out - y) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        new = jax.tree.map(lambda p, g: p - 0.05 * g, params, grads)
        stats = {}
        if log_activations:
            hidden, _ = forward(params, x)
            stats = {"hidden_mean": jnp.mean(hidden), "hidden_max": jnp.max(hidden)}
        return new, loss, stats

    return jax.jit(step)


class DeepHash:
    def __init__(self, seed: int = 0):
        k1, k2 = jax.random.split(jax.random.key(seed))
        self.params = jax.device_put({"w1": jax.random.normal(k1, (6, 8)) * 0.3,
                                      "w2": jax.random.normal(k2, (8, 2)) * 0.3}, REPL)
        self.train_step = make_train_step(log_activations=False)

    def watch(self):
        """Like wandb.watch(model): record activation statistics every step."""
        self.train_step = make_train_step(log_activations=True)


model = DeepHash()
if is_master_ordinal:
    model.watch()
rng = np.random.default_rng(jax.process_index())
for step in range(6):
    x = jax.make_array_from_process_local_data(BATCH, rng.normal(size=(4, 6)).astype(np.float32))
    y = jax.make_array_from_process_local_data(BATCH, rng.normal(size=(4, 2)).astype(np.float32))
    model.params, loss, stats = model.train_step(model.params, x, y)
    if is_master_ordinal and stats:
        print(f"step {step} hidden_mean {float(stats['hidden_mean']):.4f}", flush=True)

print("RESULT", round(float(loss), 5))
