# Disruption-prediction TCN (toy size): distributed training with a ReduceLROnPlateau schedule on validation loss
# Source: https://github.com/rmchurch/disruptcnn/issues/3
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def parse_args():
    p = argparse.ArgumentParser(description="disruptcnn training")
    p.add_argument("--epochs", type=int, default=16)
    p.add_argument("--lr", type=float, default=4.0)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--window", type=int, default=16)
    p.add_argument("--channels", type=int, default=8)
    p.add_argument("--patience", type=int, default=1)
    return p.parse_args([])


class ReduceLROnPlateau:
    def __init__(self, lr, mode="min", factor=0.5, patience=1, threshold=1e-2, min_lr=1e-3):
        self.lr, self.factor, self.patience, self.threshold, self.min_lr = lr, factor, patience, threshold, min_lr
        self.best, self.num_bad_epochs = float("inf"), 0

    def step(self, metrics):
        if metrics < self.best * (1 - self.threshold):
            self.best, self.num_bad_epochs = metrics, 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.lr = max(self.lr * self.factor, self.min_lr)
            self.num_bad_epochs = 0


def make_shots(rank, n, window, seed):
    rng = np.random.default_rng(seed + 17 * rank)
    t = np.arange(window, dtype=np.float32)
    freq = rng.uniform(0.1, 0.6, size=(n, 1)).astype(np.float32)
    x = np.sin(freq * t) + 0.4 * rng.normal(size=(n, window)).astype(np.float32)
    y = (freq[:, 0] > 0.35).astype(np.float32)
    return x.astype(np.float32), y


def init_tcn(key, window, channels):
    k1, k2 = jax.random.split(key)
    return {"conv": 0.3 * jax.random.normal(k1, (3, channels)), "head": 0.3 * jax.random.normal(k2, (channels,)),
            "bias": jnp.zeros(())}


def forward(params, x):
    patches = jnp.stack([x[:, :-2], x[:, 1:-1], x[:, 2:]], axis=-1)
    h = jax.nn.relu(patches @ params["conv"]).mean(axis=1)
    return h @ params["head"] + params["bias"]


def bce(params, x, y):
    logits = forward(params, x)
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


grad_fn = jax.jit(jax.value_and_grad(bce))
eval_fn = jax.jit(bce)


def average_across_ranks(value):
    return np.asarray(multihost_utils.process_allgather(np.asarray(value, dtype=np.float32))).mean(axis=0)


def train(args, rank):
    x_train, y_train = make_shots(rank, 128, args.window, seed=1)
    x_val, y_val = make_shots(rank, 12, args.window, seed=2)
    params = init_tcn(jax.random.PRNGKey(0), args.window, args.channels)
    scheduler = ReduceLROnPlateau(args.lr, patience=args.patience)
    history = []
    for epoch in range(args.epochs):
        lr = scheduler.lr
        for start in range(0, len(x_train), args.batch_size):
            _, grads = grad_fn(params, x_train[start:start + args.batch_size], y_train[start:start + args.batch_size])
            grads = {k: average_across_ranks(g) for k, g in grads.items()}
            params = {k: params[k] - lr * grads[k] for k in params}
        total_loss = float(eval_fn(params, x_val, y_val))
        global_loss = float(average_across_ranks(total_loss))
        if rank == 0:
            history.append((epoch, round(global_loss, 4), lr))
        scheduler.step(total_loss)
    return params, scheduler, history


def main():
    args = parse_args()
    rank = jax.process_index()
    params, scheduler, history = train(args, rank)
    checksum = float(sum(jnp.sum(jnp.abs(v)) for v in params.values()))
    print("RESULT final_lr", round(scheduler.lr, 6))
    print("RESULT params_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
