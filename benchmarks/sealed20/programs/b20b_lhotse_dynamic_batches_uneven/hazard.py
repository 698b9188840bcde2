# ASR-style training with Lhotse-like dynamic batching: utterance "cuts" are read from
# WebDataset-style shards, each rank takes its own shards, and a duration-bucketing sampler packs
# cuts into batches of at most `max_duration` seconds. Gradients are all-reduced each step.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT = 10


def list_shards(num_shards=6):
    return [f"shard-{i:06d}.tar" for i in range(num_shards)]


def read_shard(name):
    idx = int(name[6:12])
    rng = np.random.default_rng(idx)
    n = 20 + 3 * idx
    durations = rng.uniform(1.0, 16.0, size=n).round(2)
    feats = rng.normal(size=(n, FEAT)).astype(np.float32)
    targets = (feats[:, :3].sum(1) > 0).astype(np.float32)
    return [{"id": f"{name}-{j}", "duration": float(d), "x": feats[j], "y": targets[j]}
            for j, d in enumerate(durations)]


class DynamicBucketingSampler:
    def __init__(self, cuts, max_duration):
        self.cuts = sorted(cuts, key=lambda c: c["duration"])
        self.max_duration = max_duration

    def __iter__(self):
        batch, total = [], 0.0
        for cut in self.cuts:
            if batch and total + cut["duration"] > self.max_duration:
                yield batch
                batch, total = [], 0.0
            batch.append(cut)
            total += cut["duration"]
        if batch:
            yield batch


def loss_fn(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


def all_reduce_mean(tree):
    flat, td = jax.tree_util.tree_flatten(tree)
    return jax.tree_util.tree_unflatten(
        td, [np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(0) for v in flat])


def main():
    rank, world = jax.process_index(), jax.process_count()
    my_shards = list_shards()[rank::world]
    cuts = [c for s in my_shards for c in read_shard(s)]
    sampler = DynamicBucketingSampler(cuts, max_duration=45.0)
    params = {"w": jnp.zeros(FEAT), "b": jnp.zeros(())}
    steps = 0
    for epoch in range(2):
        for batch in sampler:
            x = np.stack([c["x"] for c in batch])
            y = np.stack([c["y"] for c in batch])
            _, grads = grad_fn(params, x, y)
            grads = all_reduce_mean(grads)
            params = jax.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
            steps += 1
    print(f"rank {rank}: {len(cuts)} cuts, {steps} steps")
    final = all_reduce_mean(params)
    print("RESULT w", np.round(final["w"], 4).tolist())
    print("RESULT b", round(float(final["b"]), 4))


if __name__ == "__main__":
    main()
