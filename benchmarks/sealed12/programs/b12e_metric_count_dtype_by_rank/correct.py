# Speculator trainer logs per-step metrics with a summed record count created as float32 on every rank
# Source: https://github.com/vllm-project/speculators/pull/1116
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainerConfig:
    lr: float = 0.05
    steps: int = 4
    log_freq: int = 2
    batch_per_process: int = 8
    dim: int = 4


def make_batch(step, cfg):
    rng = np.random.default_rng(1000 * step + jax.process_index())
    x = rng.normal(size=(cfg.batch_per_process, cfg.dim)).astype(np.float32)
    y = (x @ np.arange(1, cfg.dim + 1, dtype=np.float32)).astype(np.float32)
    bad = (np.abs(y) > 6.0).astype(np.int32)  # records the data pipeline flagged as broken
    return x, y, bad


class Trainer:
    def __init__(self, cfg, mesh):
        self.cfg = cfg
        self.rank = jax.process_index()
        self.world = jax.process_count()
        self.batch_sharding = NamedSharding(mesh, P("data"))
        self.metric_sharding = NamedSharding(mesh, P("data"))
        self.w = jnp.zeros((cfg.dim,), jnp.float32)
        self._step = jax.jit(self._train_step, out_shardings=(NamedSharding(mesh, P()),) * 2)
        self._sum = jax.jit(lambda v: jnp.sum(v, axis=0), out_shardings=NamedSharding(mesh, P()))
        self.global_step = 0
        self.logged = []

    def _train_step(self, w, x, y):
        loss_fn = lambda w: jnp.mean((x @ w - y) ** 2)
        loss, g = jax.value_and_grad(loss_fn)(w)
        return w - self.cfg.lr * g, loss

    def _local_metrics(self, loss, bad):
        return {
            "loss": np.asarray(float(loss) / self.world, np.float32),
            "error_records_sum": np.asarray(int(bad.sum()), np.int32),
            # one "batch" is counted per step: rank 0 contributes 1, the others 0
            "error_records_total": np.asarray(1.0 if self.rank == 0 else 0.0, np.float32),
        }

    def _reduce(self, value):
        local = np.expand_dims(value, 0)
        arr = jax.make_array_from_process_local_data(self.metric_sharding, local)
        return self._sum(arr)

    def train(self):
        for _ in range(self.cfg.steps):
            x, y, bad = make_batch(self.global_step, self.cfg)
            gx = jax.make_array_from_process_local_data(self.batch_sharding, x)
            gy = jax.make_array_from_process_local_data(self.batch_sharding, y)
            self.w, loss = self._step(self.w, gx, gy)
            if self.global_step % self.cfg.log_freq == 0:
                metrics = self._local_metrics(loss, bad)
                reduced = {k: self._reduce(v) for k, v in metrics.items()}
                reduced = {k: float(v) for k, v in reduced.items()}
                self.logged.append((self.global_step, round(reduced["loss"], 4),
                                    int(reduced["error_records_sum"]),
                                    int(reduced["error_records_total"])))
            self.global_step += 1


def main():
    cfg = TrainerConfig()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    trainer = Trainer(cfg, mesh)
    trainer.train()
    print("RESULT logged", trainer.logged)
    print("RESULT weights", np.round(np.asarray(trainer.w), 4).tolist())


main()
