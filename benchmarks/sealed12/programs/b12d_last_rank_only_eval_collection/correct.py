# Pipeline-parallel validation: every pipeline rank runs the non-loss collection pass; only the last rank consumes it
# Source: https://github.com/NVIDIA-NeMo/Megatron-Bridge/pull/6025
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("pp",))
STAGES = NamedSharding(MESH, P("pp"))  # stage s's weights live on process s
REPLICATED = NamedSharding(MESH, P())


@dataclass
class TrainConfig:
    dim: int = 4
    train_iters: int = 4
    eval_interval: int = 2
    lr: float = 0.05


def pipeline_forward(stage_w, x):
    for s in range(stage_w.shape[0]):  # activations pass stage 0 -> stage 1
        x = jnp.tanh(x @ stage_w[s])
    return x


def loss_fn(stage_w, x):
    return jnp.mean((pipeline_forward(stage_w, x) - x[:, ::-1]) ** 2)


def is_last_rank():
    return jax.process_index() == jax.process_count() - 1


class PipelineModel:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        w = rng.normal(size=(jax.process_count(), cfg.dim, cfg.dim)).astype(np.float32) * 0.5
        self.w = jax.device_put(w, STAGES)
        self._train = jax.jit(lambda w, x: w - cfg.lr * jax.grad(loss_fn)(w, x), out_shardings=STAGES)
        self._loss = jax.jit(loss_fn, out_shardings=REPLICATED)
        self._outputs = jax.jit(pipeline_forward, out_shardings=REPLICATED)


def batch(step, dim):
    return jax.device_put(np.random.default_rng(step).normal(size=(4, dim)).astype(np.float32), REPLICATED)


def evaluate(model, cfg, step, process_non_loss_data_func: Optional[Callable] = None):
    x = batch(1000 + step, cfg.dim)
    val_loss = float(model._loss(model.w, x))
    collected = None
    if process_non_loss_data_func is not None:
        collected = np.asarray(model._outputs(model.w, x))  # the collection schedule
    if collected is not None and is_last_rank():
        process_non_loss_data_func(collected, step)
    return val_loss


def main():
    cfg = TrainConfig()
    model = PipelineModel(cfg)
    written = []

    def write_activation_stats(outputs, step):  # the TensorBoard writer lives on the last rank
        written.append((step, round(float(np.abs(outputs).mean()), 5)))

    val_losses = []
    for step in range(1, cfg.train_iters + 1):
        model.w = model._train(model.w, batch(step, cfg.dim))
        if step % cfg.eval_interval == 0:
            val_losses.append(round(evaluate(model, cfg, step, write_activation_stats), 5))
    print("RESULT val_losses", val_losses)


if __name__ == "__main__":
    main()
