# Distributed batch inference over record files: each node reads its own subset of the input files (deterministic listing)
# Source: https://github.com/yahoo/TensorFlowOnSpark/pull/501
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import argparse
import glob
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES = 4


def parse_args():
    parser = argparse.ArgumentParser(description="mnist inference")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--num_files", type=int, default=12)
    return parser.parse_args([])


def export_tfrecords(data_dir, num_files):
    for i in range(num_files):
        num_records = 2 ** (i // 2)
        rng = np.random.default_rng(100 + i)
        records = rng.normal(size=(num_records, FEATURES)).astype(np.float32)
        np.save(os.path.join(data_dir, f"part-r-{i:05d}.npy"), records)


def list_files(file_pattern, shuffle=None, seed=None):
    matching_files = sorted(glob.glob(file_pattern))
    if shuffle is None:
        shuffle = True
    if shuffle:
        np.random.default_rng(seed).shuffle(matching_files)
    return matching_files


def read_records(filenames, batch_size):
    for name in filenames:
        records = np.load(name)
        for start in range(0, len(records), batch_size):
            yield records[start:start + batch_size]


def make_predict_fn(mesh):
    w = jnp.linspace(-1.0, 1.0, FEATURES)

    @jax.jit
    def predict(x):
        logits = x @ w
        return jax.nn.sigmoid(logits), jnp.sum(logits > 0)

    return predict


def inference(args, data_dir):
    worker_num, num_workers = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, P("data"))
    predict = make_predict_fn(mesh)

    ds = list_files(os.path.join(data_dir, "part-*"), shuffle=False)
    ds = ds[worker_num::num_workers]
    print(f"worker {worker_num}: files {[os.path.basename(f) for f in ds]}", flush=True)

    num_batches, positives = 0, 0
    for batch in read_records(ds, args.batch_size):
        global_batch = jax.make_array_from_process_local_data(sharding, batch)
        scores, pos = predict(global_batch)
        positives += int(pos)
        num_batches += 1
    return num_batches, positives


def main():
    args = parse_args()
    data_dir = tempfile.mkdtemp(prefix=f"mnist-tfr-{jax.process_index()}-")
    export_tfrecords(data_dir, args.num_files)
    num_batches, positives = inference(args, data_dir)
    multihost_utils.sync_global_devices("inference_done")
    print("RESULT batches", num_batches)
    print("RESULT positive_predictions", positives)


if __name__ == "__main__":
    main()
