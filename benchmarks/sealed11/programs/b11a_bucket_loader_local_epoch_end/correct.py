# Every rank asks whether any rank's aspect-bucket loader ran dry, so all ranks leave the step loop together
# Source: https://github.com/bghira/SimpleTuner/pull/2716
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainConfig:
    num_epochs: int = 2
    max_steps_per_epoch: int = 8
    micro_batch: int = 2
    lr: float = 0.05


class AspectBucketLoader:
    """Per-rank sampler over aspect buckets: each rank owns the images of its own buckets."""

    def __init__(self, rank, micro_batch):
        rng = np.random.default_rng(1234 + rank)
        n_images = 10 if rank == 0 else 14          # buckets are not balanced across ranks
        self.images = rng.normal(size=(n_images, 4)).astype(np.float32)
        self.micro_batch = micro_batch

    def __iter__(self):
        for start in range(0, len(self.images) - self.micro_batch + 1, self.micro_batch):
            yield self.images[start:start + self.micro_batch]


class Trainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.batch_sharding = NamedSharding(self.mesh, P("data"))
        self.params = jax.device_put(np.full((4,), 0.5, np.float32), NamedSharding(self.mesh, P()))
        self.loader = AspectBucketLoader(jax.process_index(), cfg.micro_batch)
        self.global_step = 0
        self._step = jax.jit(self._train_step)

    def _train_step(self, params, batch):
        def loss_fn(p):
            return jnp.mean((batch @ p - 1.0) ** 2)
        loss, grad = jax.value_and_grad(loss_fn)(params)
        return params - self.cfg.lr * grad, loss

    def _any_rank_reached_epoch_end(self, local_done):
        flags = multihost_utils.process_allgather(np.array([int(local_done)], np.int32))
        return bool(np.max(flags) > 0)

    def train_epoch(self, epoch):
        iterator = iter(self.loader)
        losses = []
        for _ in range(self.cfg.max_steps_per_epoch):
            batch = next(iterator, None)
            if self._any_rank_reached_epoch_end(batch is None):
                print(f"rank {jax.process_index()} leaves epoch {epoch}: a rank exhausted its dataloader")
                break
            global_batch = jax.make_array_from_process_local_data(self.batch_sharding, batch)
            self.params, loss = self._step(self.params, global_batch)
            losses.append(float(loss))
            self.global_step += 1
        return losses

    def train(self):
        for epoch in range(self.cfg.num_epochs):
            losses = self.train_epoch(epoch)
            steps = multihost_utils.process_allgather(np.array([len(losses)], np.int32))
            print(f"epoch {epoch}: steps per rank {steps.ravel().tolist()}")
        return self.params


def main():
    trainer = Trainer(TrainConfig())
    params = trainer.train()
    print("RESULT global_step", trainer.global_step)
    print("RESULT params", [round(float(v), 5) for v in np.asarray(params.addressable_data(0))])


main()
