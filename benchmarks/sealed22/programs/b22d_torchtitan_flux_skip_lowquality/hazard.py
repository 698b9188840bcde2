# A torchtitan-style Flux training loop: an iterable image-text dataset is split by node
# (sample i goes to rank i % world_size), the preprocessing drops low-quality samples (images
# with a single color channel), and an FSDP-style model all-gathers its parameter shards in every
# forward step and reduce-scatters the gradients after backward.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

IMG = 4


def cc12m_stream(num_samples=12):
    rng = np.random.default_rng(2025)
    for i in range(num_samples):
        channels = 1 if i in (3, 7) else 3
        yield {"__key__": f"{i:06d}", "jpg": rng.normal(size=(channels, IMG, IMG)).astype(np.float32),
               "txt": f"caption {i}"}


def preprocess(sample):
    img = sample["jpg"]
    if img.shape[0] != 3:
        return {"image": None}
    return {"image": img.mean(0).ravel(), "t5_encodings": np.full(IMG * IMG, len(sample["txt"]) / 10.0, np.float32)}


class FluxDataset:
    def __init__(self, dp_rank, dp_world_size, infinite=False):
        self.dp_rank, self.dp_world_size, self.infinite = dp_rank, dp_world_size, infinite

    def __iter__(self):
        for idx, sample in enumerate(cc12m_stream()):
            if idx % self.dp_world_size != self.dp_rank:
                continue
            sample_dict = preprocess(sample)
            if sample_dict["image"] is None:
                print(f"rank {self.dp_rank}: low quality image {sample['__key__']} is skipped")
                continue
            yield sample_dict


def batched(dataset, batch_size):
    buf = []
    for item in dataset:
        buf.append(item)
        if len(buf) == batch_size:
            yield {k: np.stack([b[k] for b in buf]) for k in buf[0]}
            buf = []


class FSDPLinear:
    def __init__(self, dim, rank, world):
        full = np.random.default_rng(0).normal(size=(dim, dim)).astype(np.float32) * 0.1
        self.rows = dim // world
        self.shard = full[rank * self.rows:(rank + 1) * self.rows]
        self._grad = jax.jit(jax.value_and_grad(
            lambda w, x, c: jnp.mean((x @ w - c) ** 2)))

    def train_step(self, batch, lr=0.05):
        full = np.asarray(multihost_utils.process_allgather(self.shard)).reshape(-1, self.shard.shape[1])
        loss, g = self._grad(full, batch["image"], batch["t5_encodings"])
        g_sum = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
        r = jax.process_index()
        self.shard = self.shard - lr * g_sum[r * self.rows:(r + 1) * self.rows]
        return float(loss)


def main():
    rank, world = jax.process_index(), jax.process_count()
    model = FSDPLinear(IMG * IMG, rank, world)
    dataloader = batched(FluxDataset(rank, world), batch_size=2)
    steps = 0
    for batch in dataloader:
        model.train_step(batch)
        steps += 1
    full = np.asarray(multihost_utils.process_allgather(model.shard)).reshape(-1, IMG * IMG)
    print(f"rank {rank}: finished after {steps} steps")
    print("RESULT steps", steps)
    print("RESULT weight_norm", round(float(np.linalg.norm(full)), 4))


if __name__ == "__main__":
    main()
