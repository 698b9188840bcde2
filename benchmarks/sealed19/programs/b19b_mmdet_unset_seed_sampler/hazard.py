# Detector-style training entry point: seed handling, distributed sampler, data-parallel steps on a global mesh
# Source: https://github.com/open-mmlab/mmdetection/pull/6457
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def parse_args():
    parser = argparse.ArgumentParser(description="Train a detector")
    parser.add_argument("--seed", type=int, default=None, help="random seed")
    parser.add_argument("--samples-per-gpu", type=int, default=4)
    parser.add_argument("--max-iters", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args([])


def init_random_seed(seed=None):
    """Pick the seed used for weight init and for shuffling in the distributed sampler."""
    if seed is not None:
        return seed
    return int(np.random.randint(2 ** 31))


class DistributedSampler:
    def __init__(self, num_samples, num_replicas, rank, seed=0):
        self.num_samples, self.num_replicas, self.rank, self.seed = num_samples, num_replicas, rank, seed
        self.epoch = 0

    def __iter__(self):
        rng = np.random.default_rng(self.epoch + self.seed)
        indices = rng.permutation(self.num_samples)
        return iter(indices[self.rank::self.num_replicas].tolist())


def build_detector_head(key, in_dim=8, num_classes=3):
    k1, k2 = jax.random.split(key)
    return {"w": jax.random.normal(k1, (in_dim, num_classes)) * 0.1, "b": jnp.zeros(num_classes)}


def loss_fn(params, feats, labels):
    logits = feats @ params["w"] + params["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))


def main():
    args = parse_args()
    rank, world = jax.process_index(), jax.process_count()
    seed = init_random_seed(args.seed)
    data_rng = np.random.default_rng(2021)
    feats = data_rng.normal(size=(48, 8)).astype(np.float32)
    labels = (np.abs(feats[:, :3]).argmax(axis=1)).astype(np.int32)

    mesh = Mesh(np.array(jax.devices()), ("data",))
    replicated, batch_sharded = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    local_params = build_detector_head(jax.random.PRNGKey(seed))
    params = jax.tree_util.tree_map(
        lambda p: jax.make_array_from_callback(p.shape, replicated, lambda idx, p=p: np.asarray(p)[idx]), local_params)

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - args.lr * g, params, grads), loss

    sampler = DistributedSampler(len(feats), world, rank, seed=seed)
    local_indices = list(iter(sampler))
    for it in range(args.max_iters):
        idx = [local_indices[(it * args.samples_per_gpu + j) % len(local_indices)] for j in range(args.samples_per_gpu)]
        x = jax.make_array_from_process_local_data(batch_sharded, feats[idx])
        y = jax.make_array_from_process_local_data(batch_sharded, labels[idx])
        params, loss = train_step(params, x, y)

    w_local = np.asarray(params["w"].addressable_data(0))
    print("RESULT iters", args.max_iters)
    print("RESULT final_loss", round(float(np.asarray(loss.addressable_data(0))), 4))
    print("RESULT head_checksum", round(float(np.abs(w_local).sum()), 4))


if __name__ == "__main__":
    main()
