# LoRA fine-tune with FSDP-sharded weights: only the main process calls save_model, whose state-dict gather is collective
# Source: https://github.com/kyuz0/amd-strix-halo-llm-finetuning/pull/6
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
REPLICATED = NamedSharding(MESH, P())


@dataclass
class FinetuneConfig:
    rank: int = 2
    dim: int = 4
    steps: int = 4
    lr: float = 0.2


def lora_loss(a, b, x, y):
    return jnp.mean((x @ (a @ b) - y) ** 2)


class LoRATrainer:
    def __init__(self, cfg):
        rng = np.random.default_rng(0)
        self.cfg = cfg
        self.params = {"lora_A": jax.device_put(rng.normal(size=(cfg.dim, cfg.rank)).astype(np.float32) * 0.1, SHARDED),
                       "lora_B": jax.device_put(np.zeros((cfg.rank, cfg.dim), np.float32), SHARDED)}
        self._step = jax.jit(self._update)
        self._gather = jax.jit(lambda p: p, out_shardings=REPLICATED)

    def _update(self, params, x, y):
        loss, (ga, gb) = jax.value_and_grad(lora_loss, argnums=(0, 1))(params["lora_A"], params["lora_B"], x, y)
        return loss, {"lora_A": params["lora_A"] - self.cfg.lr * ga, "lora_B": params["lora_B"] - self.cfg.lr * gb}

    def train(self):
        losses = []
        for step in range(self.cfg.steps):
            rng = np.random.default_rng(100 * jax.process_index() + step)
            x = rng.normal(size=(4, self.cfg.dim)).astype(np.float32)
            gx = jax.make_array_from_process_local_data(SHARDED, x)
            gy = jax.make_array_from_process_local_data(SHARDED, x[:, ::-1].copy())
            loss, self.params = self._step(self.params, gx, gy)
            losses.append(round(float(loss), 5))
        return losses

    def save_model(self, out_dir):
        full = {k: np.asarray(self._gather(v)) for k, v in self.params.items()}  # FSDP full-state-dict all-gather
        if jax.process_index() == 0:  # only the main process writes the adapter file
            np.savez(os.path.join(out_dir, "adapter_model.npz"), **full)


def main():
    cfg = FinetuneConfig()
    out_dir = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_main_only_sharded_save", os.environ.get("JOB_ID", "0"))
    os.makedirs(out_dir, exist_ok=True)
    trainer = LoRATrainer(cfg)
    losses = trainer.train()
    is_main = jax.process_index() == 0
    if is_main:
        trainer.save_model(out_dir)
    multihost_utils.sync_global_devices("adapter saved")
    saved = np.load(os.path.join(out_dir, "adapter_model.npz"))
    print("RESULT losses", losses)
    print("RESULT adapter_norm", round(float(np.linalg.norm(saved["lora_A"] @ saved["lora_B"])), 5))


if __name__ == "__main__":
    main()
