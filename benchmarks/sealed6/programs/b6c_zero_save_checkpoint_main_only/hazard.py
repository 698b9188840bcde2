# ZeRO-style engine: save_checkpoint is called only from the main process, but it gathers the partitioned optimizer state
# Source: https://github.com/deepspeedai/DeepSpeed/issues/797 (port of the DeepSpeed save_checkpoint-on-rank-0 hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TrainConfig:
    hidden: int = 8
    lr: float = 0.05
    beta: float = 0.9
    train_steps: int = 6
    save_interval: int = 3
    local_batch: int = 4


class ZeroEngine:
    """Data-parallel engine; the optimizer momentum is partitioned over the data-parallel ranks (stage 1)."""

    def __init__(self, cfg: TrainConfig, params: np.ndarray):
        self.cfg = cfg
        self.mesh = jax.make_mesh((jax.device_count(),), ("dp",))
        self.replicated = NamedSharding(self.mesh, P())
        self.partitioned = NamedSharding(self.mesh, P("dp"))
        self.params = jax.device_put(params, self.replicated)
        self.exp_avg = jax.device_put(np.zeros_like(params), self.partitioned)
        self.global_steps = 0
        self._step = jax.jit(self._update, out_shardings=(self.replicated, self.partitioned, self.replicated))

    def _update(self, params, exp_avg, x, y):
        def loss_fn(w):
            return jnp.mean((x @ w - y) ** 2)
        loss, grad = jax.value_and_grad(loss_fn)(params)
        exp_avg = self.cfg.beta * exp_avg + (1 - self.cfg.beta) * grad
        return params - self.cfg.lr * exp_avg, exp_avg, loss

    def train_batch(self, x_local: np.ndarray, y_local: np.ndarray) -> float:
        batch = NamedSharding(self.mesh, P("dp"))
        x = jax.make_array_from_process_local_data(batch, x_local)
        y = jax.make_array_from_process_local_data(batch, y_local)
        self.params, self.exp_avg, loss = self._step(self.params, self.exp_avg, x, y)
        self.global_steps += 1
        return float(loss)

    def _zero_state_dict(self) -> dict:
        # every rank holds only its slice of the momentum: consolidate it before writing
        return {"exp_avg": multihost_utils.process_allgather(self.exp_avg, tiled=True),
                "params": np.asarray(self.params.addressable_data(0))}

    def save_checkpoint(self, save_dir: str, tag: str) -> str:
        state = self._zero_state_dict()
        path = os.path.join(save_dir, tag + ".npz")
        if jax.process_index() == 0:
            np.savez(path, **state)
        multihost_utils.sync_global_devices("save_checkpoint_" + tag)
        return path


def main():
    cfg = TrainConfig()
    rng = np.random.default_rng(0)
    engine = ZeroEngine(cfg, rng.normal(size=(cfg.hidden,)).astype(np.float32))
    data_rng = np.random.default_rng(100 + jax.process_index())
    save_dir = tempfile.mkdtemp(prefix="zero_ckpt_")
    saved = []
    for step in range(cfg.train_steps):
        x = data_rng.normal(size=(cfg.local_batch, cfg.hidden)).astype(np.float32)
        y = x.sum(axis=1).astype(np.float32)
        loss = engine.train_batch(x, y)
        if jax.process_index() == 0 and engine.global_steps % cfg.save_interval == 0:
            saved.append(engine.save_checkpoint(save_dir, f"global_step{engine.global_steps}"))
    print("RESULT loss", round(loss, 4))
    print("RESULT params", np.round(np.asarray(engine.params.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
