# Data-parallel regression training: each worker reads its own share of the record files,
# gradients are averaged across workers every step (Horovod-style allreduce).
import argparse
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RECORD_FILES = {
    "train-00000-of-00005": 96,
    "train-00001-of-00005": 80,
    "train-00002-of-00005": 112,
    "train-00003-of-00005": 64,
    "train-00004-of-00005": 88,
}


def parse_args():
    parser = argparse.ArgumentParser(description="distributed training")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--num-epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--features", type=int, default=6)
    return parser.parse_args([])


def read_records(name, num_rows, features):
    rng = np.random.default_rng(int(name.split("-")[1]))
    x = rng.normal(size=(num_rows, features)).astype(np.float32)
    y = (x @ np.linspace(-1.0, 1.0, features) + 0.1 * rng.normal(size=num_rows)).astype(np.float32)
    return x, y


def input_fn(files, args):
    """Yields batches from this worker's files, repeated indefinitely."""
    parts = [read_records(f, RECORD_FILES[f], args.features) for f in files]
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    for _ in itertools.count():
        for start in range(0, len(x) - args.batch_size + 1, args.batch_size):
            yield x[start:start + args.batch_size], y[start:start + args.batch_size]


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def allreduce_average(grads):
    flat, treedef = jax.tree_util.tree_flatten(grads)
    averaged = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for g in flat]
    return jax.tree_util.tree_unflatten(treedef, averaged)


def main():
    args = parse_args()
    rank, size = jax.process_index(), jax.process_count()
    my_files = sorted(RECORD_FILES)[rank::size]
    params = {"w": jnp.zeros((args.features,)), "b": jnp.zeros(())}
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))

    total_rows = sum(RECORD_FILES.values())
    steps_per_epoch = total_rows // (size * args.batch_size)
    batches = input_fn(my_files, args)
    step = 0
    for x, y in itertools.islice(batches, steps_per_epoch * args.num_epochs):
        loss, grads = grad_fn(params, x, y)
        grads = allreduce_average(grads)
        params = jax.tree_util.tree_map(lambda p, g: p - args.lr * g, params, grads)
        step += 1
        if step % 5 == 0:
            print(f"worker {rank} step {step} loss {float(loss):.4f}")

    print("RESULT steps", step)
    print("RESULT weights", np.round(np.asarray(params["w"]), 4).tolist())


if __name__ == "__main__":
    main()
