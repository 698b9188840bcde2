# Flax text-to-image fine-tuning: the training dataset is only built under `if jax.process_index() == 0`
# Source: https://github.com/huggingface/diffusers/issues/2957
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("batch",))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class TrainState:
    step: jax.Array
    params: dict
    momentum: dict

    @classmethod
    def create(cls, params: dict) -> "TrainState":
        return cls(jnp.zeros((), jnp.int32), params, jax.tree.map(jnp.zeros_like, params))

    def apply_gradients(self, grads: dict, lr: float = 1e-2) -> "TrainState":
        mom = jax.tree.map(lambda m, g: 0.9 * m + g, self.momentum, grads)
        return TrainState(self.step + 1, jax.tree.map(lambda p, m: p - lr * m, self.params, mom), mom)


@dataclasses.dataclass
class Args:
    seed: int = 0
    resolution: int = 8
    train_batch_size: int = 2
    max_train_samples: int | None = 24
    num_train_epochs: int = 2


class ToyImageDataset:
    def __init__(self, images: np.ndarray):
        self.images = images

    def shuffle(self, seed: int) -> "ToyImageDataset":
        return ToyImageDataset(self.images[np.random.default_rng(seed).permutation(len(self.images))])

    def select(self, idx) -> "ToyImageDataset":
        return ToyImageDataset(self.images[list(idx)])

    def with_transform(self, fn) -> "ToyImageDataset":
        return ToyImageDataset(fn(self.images))

    def __len__(self) -> int:
        return len(self.images)


def load_dataset(args: Args) -> dict:
    rng = np.random.default_rng(1234)
    return {"train": ToyImageDataset(rng.normal(size=(40, args.resolution * args.resolution)).astype(np.float32))}


def batches(dataset: ToyImageDataset, batch_size: int, seed: int):
    order = np.random.default_rng(seed).permutation(len(dataset))
    for start in range(0, len(order) - batch_size + 1, batch_size):
        yield {"pixel_values": dataset.images[order[start:start + batch_size]]}


def shard(batch: dict) -> dict:
    sharding = NamedSharding(MESH, P("batch"))
    return {k: jax.make_array_from_process_local_data(sharding, v) for k, v in batch.items()}


def train_step(state, batch):
    def compute_loss(params):
        pred = batch["pixel_values"] @ params["w"]
        return jnp.mean((pred - batch["pixel_values"]) ** 2)

    loss, grad = jax.value_and_grad(compute_loss)(state.params)
    return state.apply_gradients(grads=grad), {"loss": loss}


def main(args: Args) -> None:
    dataset = load_dataset(args)

    def preprocess_train(images):
        return (images - 0.5 * images.mean(axis=1, keepdims=True)) * 0.5

    if jax.process_index() == 0:
        if args.max_train_samples is not None:
            dataset["train"] = dataset["train"].shuffle(seed=args.seed).select(range(args.max_train_samples))
        # Set the training transforms
        train_dataset = dataset["train"].with_transform(preprocess_train)

    total_train_batch_size = args.train_batch_size * jax.local_device_count()
    dim = args.resolution * args.resolution
    state = TrainState.create(params={"w": jnp.eye(dim) * 0.5})
    p_train_step = jax.jit(train_step, donate_argnums=(0,))
    state = jax.device_put(state, NamedSharding(MESH, P()))

    steps_per_epoch = math.ceil(len(train_dataset) // total_train_batch_size)
    train_metric = None
    for epoch in range(args.num_train_epochs):
        for batch in batches(train_dataset, total_train_batch_size, seed=args.seed + epoch):
            state, train_metric = p_train_step(state, shard(batch))
    loss = float(train_metric["loss"])
    print("RESULT steps_per_epoch", steps_per_epoch)
    print("RESULT loss", round(loss, 5))
    print("RESULT wsum", round(float(jnp.sum(state.params["w"])), 4))


if __name__ == "__main__":
    main(Args())
