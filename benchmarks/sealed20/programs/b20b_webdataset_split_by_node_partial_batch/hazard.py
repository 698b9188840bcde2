# Image-text contrastive training fed by a WebDataset-style pipeline: samples are streamed from a
# list of tar shards, split between nodes by taking every n-th sample, and batched (partial last
# batch kept); each node runs a DDP-style step per batch with all-reduced gradients.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DIM = 6
SHARDS = [f"train-{i:04d}.tar" for i in range(3)]
SAMPLES_PER_SHARD = [27, 27, 27]


def shard_samples(url):
    idx = int(url[6:10])
    rng = np.random.default_rng(idx)
    for key in range(SAMPLES_PER_SHARD[idx]):
        img = rng.normal(size=DIM).astype(np.float32)
        txt = img + 0.3 * rng.normal(size=DIM).astype(np.float32)
        yield {"__key__": f"{idx:04d}/{key:06d}", "jpg": img, "txt": txt}


class WebDatasetPipeline:
    def __init__(self, urls, batch_size, rank, world_size):
        self.urls, self.batch_size = urls, batch_size
        self.rank, self.world_size = rank, world_size

    def split_by_node(self, src):
        for i, sample in enumerate(src):
            if i % self.world_size == self.rank:
                yield sample

    def samples(self):
        for url in self.urls:
            yield from shard_samples(url)

    def __iter__(self):
        batch = []
        for sample in self.split_by_node(self.samples()):
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate(batch)
                batch = []
        if batch:
            yield self.collate(batch)

    @staticmethod
    def collate(batch):
        return np.stack([s["jpg"] for s in batch]), np.stack([s["txt"] for s in batch])


def clip_loss(w, img, txt):
    logits = (img @ w) @ txt.T
    labels = jnp.arange(img.shape[0])
    return -jnp.mean(jax.nn.log_softmax(logits, axis=1)[labels, labels])


grad_fn = jax.jit(jax.value_and_grad(clip_loss))


def main():
    rank, world = jax.process_index(), jax.process_count()
    loader = WebDatasetPipeline(SHARDS, batch_size=8, rank=rank, world_size=world)
    w = jnp.eye(DIM) * 0.5
    steps = 0
    for epoch in range(2):
        for img, txt in loader:
            loss, g = grad_fn(w, img, txt)
            g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
            w = w - 0.1 * g
            steps += 1
    losses = np.asarray(multihost_utils.process_allgather(np.float32(loss)))
    print(f"rank {rank}: {steps} steps")
    print("RESULT steps_per_rank", steps)
    print("RESULT mean_last_loss", round(float(losses.mean()), 4))
    print("RESULT w_trace", round(float(jnp.trace(w)), 4))


if __name__ == "__main__":
    main()
