# Reward-model fine-tuning on preference pairs, data-parallel over all processes (sampler-style split)
# Source: https://github.com/areal-project/AReaL/pull/456
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainConfig:
    dataset_size: int = 255
    train_batch_size: int = 16
    hidden: int = 6
    lr: float = 0.05
    epochs: int = 1
    seed: int = 1


def load_preference_dataset(cfg):
    rng = np.random.default_rng(cfg.seed)
    chosen = rng.normal(size=(cfg.dataset_size, cfg.hidden)).astype(np.float32) + 0.5
    rejected = rng.normal(size=(cfg.dataset_size, cfg.hidden)).astype(np.float32)
    return {"chosen": chosen, "rejected": rejected}


def get_custom_dataset(cfg, rank, world_size):
    full = load_preference_dataset(cfg)
    n = cfg.dataset_size
    num_samples = n // world_size
    indices = np.arange(num_samples * world_size)[rank::world_size]
    return {k: v[indices] for k, v in full.items()}


class StatefulDataLoader:
    def __init__(self, dataset, batch_size, drop_last=True):
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __len__(self):
        n = len(self.dataset["chosen"])
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        for i in range(len(self)):
            sl = slice(i * self.batch_size, (i + 1) * self.batch_size)
            yield {k: v[sl] for k, v in self.dataset.items()}


def bradley_terry_loss(w, batch):
    r_chosen = batch["chosen"] @ w
    r_rejected = batch["rejected"] @ w
    return -jnp.mean(jax.nn.log_sigmoid(r_chosen - r_rejected))


grad_fn = jax.jit(jax.value_and_grad(bradley_terry_loss))


def all_reduce_mean(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(axis=0)


def main():
    cfg = TrainConfig()
    rank, world_size = jax.process_index(), jax.process_count()
    train_dataset = get_custom_dataset(cfg, rank, world_size)
    train_dataloader = StatefulDataLoader(train_dataset, cfg.train_batch_size // world_size, drop_last=True)
    steps_per_epoch = len(train_dataloader)
    print(f"rank {rank}: {len(train_dataset['chosen'])} samples, {steps_per_epoch} steps per epoch", flush=True)

    w = jnp.zeros((cfg.hidden,), jnp.float32)
    global_step = 0
    for epoch in range(cfg.epochs):
        for batch in train_dataloader:
            loss, grad = grad_fn(w, batch)
            grad = all_reduce_mean(grad)
            loss = float(all_reduce_mean(loss))
            w = w - cfg.lr * grad
            global_step += 1

    print("RESULT global_step", global_step)
    print("RESULT final_loss", round(loss, 5))
    print("RESULT reward_weights", np.round(np.asarray(w), 4).tolist())


if __name__ == "__main__":
    main()
