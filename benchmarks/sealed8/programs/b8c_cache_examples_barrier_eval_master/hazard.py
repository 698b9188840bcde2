# run_glue-style feature cache: first-process-builds barrier pair is reused by the master-only evaluation
# Source: https://github.com/huggingface/transformers/pull/1081 (port of a transformers /
# torch.distributed barrier hang to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import argparse
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))


def barrier():
    multihost_utils.sync_global_devices("load_and_cache_examples")


def convert_examples_to_features(split: str, n: int):
    rng = np.random.default_rng(0 if split == "train" else 1)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, (x.sum(axis=1) > 0).astype(np.float32)


def load_and_cache_examples(args, task: str, evaluate: bool = False):
    if args.local_rank not in [-1, 0]:
        barrier()  # only the first process builds the features, the others use the cache
    split = "dev" if evaluate else "train"
    cached = os.path.join(args.data_dir, f"cached_{split}_{task}.pkl")
    if os.path.exists(cached):
        with open(cached, "rb") as f:
            features = pickle.load(f)
    else:
        features = convert_examples_to_features(split, 16 if evaluate else 32)
        if args.local_rank in [-1, 0]:
            with open(cached, "wb") as f:
                pickle.dump(features, f)
    if args.local_rank == 0:
        barrier()  # release the others: the cache is written
    return features


@jax.jit
def train_step(w, x, y):
    g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g


def train(args, w, features):
    x, y = features
    world, pid = jax.process_count(), jax.process_index()
    for step in range(3):
        xs = x[pid::world][step * 4:(step + 1) * 4]
        ys = y[pid::world][step * 4:(step + 1) * 4]
        gx = multihost_utils.host_local_array_to_global_array(xs, MESH, P("data"))
        gy = multihost_utils.host_local_array_to_global_array(ys, MESH, P("data"))
        w = train_step(w, gx, gy)
    return np.asarray(w)


def evaluate(args, w, task: str):
    x, y = load_and_cache_examples(args, task, evaluate=True)
    acc = float(np.mean(((x @ w) > 0.5) == (y > 0.5)))
    return {"acc": round(acc, 4)}


def main():
    args = argparse.Namespace(local_rank=jax.process_index(), do_eval=True,
                              data_dir=os.path.join(tempfile.gettempdir(), "mcjax_sealed8_glue",
                                                    os.environ.get("JOB_ID", "local")))
    os.makedirs(args.data_dir, exist_ok=True)
    task = "mrpc"
    train_features = load_and_cache_examples(args, task, evaluate=False)
    w = jax.device_put(jnp.zeros(4, jnp.float32), NamedSharding(MESH, P()))
    w = train(args, w, train_features)
    print(f"RESULT w {np.round(w, 4).tolist()}", flush=True)
    results = {}
    if args.do_eval and args.local_rank in [-1, 0]:
        results = evaluate(args, w, task)
    multihost_utils.sync_global_devices("end_of_run")
    print("RESULT finished", flush=True)


if __name__ == "__main__":
    main()
