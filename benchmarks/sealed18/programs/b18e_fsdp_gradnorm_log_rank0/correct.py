# Fully-sharded training loop with a LightningModule-style hook that logs per-parameter gradient norms
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17600
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

LOG_EVERY_N_STEPS = 2


@contextmanager
def summon_full_params(tree):
    """Unshard every leaf (all-gather across the fsdp axis) for the duration of the block."""
    yield {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in tree.items()}


class InMemoryLogger:
    def __init__(self):
        self.records = []

    def log_metrics(self, metrics, step):
        self.records.append((step, metrics))


class SpeechDenoiser:
    def __init__(self, mesh, logger):
        self.mesh, self.logger = mesh, logger
        self.global_rank = jax.process_index()
        self.global_step = 0
        shard = NamedSharding(mesh, P("fsdp"))
        rng = np.random.default_rng(0)
        full = {"encoder": rng.normal(size=(16, 8)).astype(np.float32) * 0.2,
                "decoder": rng.normal(size=(16, 8)).astype(np.float32) * 0.2}
        n = jax.process_count()
        self.params = {k: jax.make_array_from_process_local_data(
            shard, v[self.global_rank * 16 // n:(self.global_rank + 1) * 16 // n], v.shape) for k, v in full.items()}
        self._grad = jax.jit(jax.value_and_grad(self.loss_fn),
                             out_shardings=(NamedSharding(mesh, P()), {k: shard for k in full}))
        self._apply = jax.jit(lambda p, g: jax.tree.map(lambda a, b: a - 0.05 * b, p, g))

    @staticmethod
    def loss_fn(params, noisy, clean):
        latent = jnp.tanh(noisy @ params["encoder"])
        return jnp.mean((latent @ params["decoder"].T - clean) ** 2)

    def should_update_logs(self):
        return self.global_step % LOG_EVERY_N_STEPS == 0

    def on_before_optimizer_step(self, grads):
        # inspect gradients here (only compute on logging steps)
        if self.should_update_logs():
            with summon_full_params(grads) as full_grads:
                norms = {f"grad_2.0_norm/{k}": float(np.linalg.norm(g)) for k, g in full_grads.items()}
            if self.global_rank == 0:
                self.logger.log_metrics(norms, step=self.global_step)

    def training_step(self, noisy, clean):
        loss, grads = self._grad(self.params, noisy, clean)
        self.on_before_optimizer_step(grads)
        self.params = self._apply(self.params, grads)
        self.global_step += 1
        return float(loss.addressable_shards[0].data)


def main():
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    model = SpeechDenoiser(mesh, InMemoryLogger())
    batch_sharding = NamedSharding(mesh, P("fsdp"))
    rng = np.random.default_rng(10 + jax.process_index())
    for _ in range(5):
        clean = rng.normal(size=(4, 16)).astype(np.float32)
        noisy = clean + 0.3 * rng.normal(size=clean.shape).astype(np.float32)
        loss = model.training_step(jax.make_array_from_process_local_data(batch_sharding, noisy),
                                   jax.make_array_from_process_local_data(batch_sharding, clean))
        print("RESULT step", model.global_step, "loss", round(loss, 5))
    if model.global_rank == 0:
        for step, metrics in model.logger.records:
            print("grad norms", step, {k: round(v, 4) for k, v in metrics.items()})


if __name__ == "__main__":
    main()
