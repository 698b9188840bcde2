# GRPO trainer with a vLLM-style rollout server: the "weights changed since last push" decision is taken on rank 0 and broadcast, and the pushed step is shared
# Source: https://github.com/PrimeIntellect-ai/verifiers/pull/436
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SERVER_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_lora_sync_rank0_last_step", os.environ.get("JOB_ID", "0"))
MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARD = NamedSharding(MESH, P("fsdp", None))
ROWS = NamedSharding(MESH, P("fsdp"))
RANK_R, DIM, GRAD_ACC, MICRO_STEPS = 2, 4, 2, 6


class RolloutServer:
    """Stands in for the vLLM server that rank 0 pushes merged weights to."""

    def update_weights(self, merged, step):
        os.makedirs(SERVER_DIR, exist_ok=True)
        with open(os.path.join(SERVER_DIR, "weights.json"), "w") as f:
            json.dump({"step": step, "checksum": float(np.abs(merged).sum())}, f)


@jax.jit
def merge_lora(base, a, b):
    return base + a @ b


@jax.jit
def grad_step(a, b, base, x):
    loss, (ga, gb) = jax.value_and_grad(lambda a, b: jnp.mean((x @ (base + a @ b)) ** 2), argnums=(0, 1))(a, b)
    return a - 0.01 * ga, b - 0.01 * gb, loss


class RLTrainer:
    def __init__(self):
        rng = np.random.default_rng(0)
        self.base = jax.device_put(rng.normal(size=(DIM, DIM)).astype(np.float32), SHARD)
        self.a = jax.device_put(rng.normal(size=(DIM, RANK_R)).astype(np.float32) * 0.1, SHARD)
        self.b = jax.device_put(np.zeros((RANK_R, DIM), np.float32), NamedSharding(MESH, P()))
        self.global_step, self._last_loaded_step = 0, -1
        self.server = RolloutServer() if jax.process_index() == 0 else None

    def _move_model_to_vllm(self):
        merged = multihost_utils.process_allgather(merge_lora(self.base, self.a, self.b), tiled=True)
        if jax.process_index() == 0:
            self.server.update_weights(np.asarray(merged), self.global_step)
        self._last_loaded_step = self.global_step   # every rank records the pushed step

    def maybe_sync(self):
        should_sync = self.global_step != self._last_loaded_step
        should_sync = bool(multihost_utils.broadcast_one_to_all(np.bool_(should_sync)))   # rank 0 decides for all
        if should_sync:
            self._move_model_to_vllm()

    def train(self):
        loss = jnp.zeros(())
        for micro in range(MICRO_STEPS):
            self.maybe_sync()                       # before each generation round
            x = np.random.default_rng(10 * jax.process_index() + micro).normal(size=(2, DIM)).astype(np.float32)
            self.a, self.b, loss = grad_step(self.a, self.b, self.base, jax.make_array_from_process_local_data(ROWS, x))
            if (micro + 1) % GRAD_ACC == 0:
                self.global_step += 1
        return loss


def main():
    trainer = RLTrainer()
    loss = trainer.train()
    multihost_utils.sync_global_devices("training done")
    with open(os.path.join(SERVER_DIR, "weights.json")) as f:
        pushed = json.load(f)
    print("RESULT pushed_step", pushed["step"])
    print("RESULT loss", round(float(loss), 5))


if __name__ == "__main__":
    main()
