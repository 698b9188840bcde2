# ZeRO-2 style gradient reduction: the ready gradients are sorted by parameter id before the bucket is reduced
# Source: https://github.com/deepspeedai/DeepSpeed/issues/2343
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PARAM_IDS = {"encoder": 0, "decoder": 1}


@dataclass
class TaskBatch:
    task: str
    x: np.ndarray
    y: np.ndarray


def make_batch(rank, step):
    """Each process trains on its own task mix; the task decides the order the two blocks are applied in."""
    rng = np.random.default_rng(1000 * rank + step)
    task = ["caption", "retrieval"][rank]
    x = rng.normal(size=(6, 4)).astype(np.float32)
    return TaskBatch(task, x, np.tanh(x.sum(axis=1)).astype(np.float32))


def forward(params, batch, trace):
    order = ["encoder", "decoder"] if batch.task == "caption" else ["decoder", "encoder"]
    h = jnp.asarray(batch.x)
    for name in order:
        trace.append(name)
        h = jnp.tanh(h * params[name])
    return jnp.mean((h.sum(axis=1) - batch.y) ** 2)


@dataclass
class GradBucketReducer:
    """Reduces gradients as their backward hooks fire (reverse of the forward usage order)."""
    ready: list = field(default_factory=list)

    def on_grad_ready(self, name):
        self.ready.append(name)

    def reduce(self, grads):
        reduced = {}
        for name in sorted(self.ready, key=PARAM_IDS.get):   # same order on every process
            stacked = multihost_utils.process_allgather(np.asarray(grads[name], np.float32))
            reduced[name] = np.asarray(stacked).mean(axis=0)
        self.ready.clear()
        return reduced


def train(steps=4, lr=0.2):
    params = {"encoder": jnp.full(4, 0.5), "decoder": jnp.full(4, -0.3)}
    reducer = GradBucketReducer()
    losses = []
    for step in range(steps):
        batch = make_batch(jax.process_index(), step)
        trace = []
        loss, grads = jax.value_and_grad(lambda p: forward(p, batch, trace))(params)
        for name in reversed(trace):
            reducer.on_grad_ready(name)
        reduced = reducer.reduce(grads)
        params = {k: params[k] - lr * reduced[k] for k in params}
        losses.append(float(np.mean(multihost_utils.process_allgather(np.float32(loss)))))
    return params, losses


def main():
    params, losses = train()
    multihost_utils.sync_global_devices("train done")
    print("RESULT losses", [round(v, 5) for v in losses])
    print("RESULT params", {k: np.round(np.asarray(v), 5).tolist() for k, v in sorted(params.items())})


if __name__ == "__main__":
    main()
