# Multi-dataset VLM benchmark runner: rank 0's evaluation block `continue`s past the barrier at the end of the dataset loop
# Source: https://github.com/open-compass/VLMEvalKit/pull/772
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
WORK_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed16_rank0_continue_skips_loop_barrier",
                        os.environ.get("JOB_ID", "job"))
DATASETS = ["MMBench_DEV_EN", "MMMU_TEST", "MathVista_MINI", "AI2D_TEST"]
TEST_SPLITS = {"MMMU_TEST"}        # no ground truth: rank 0 only converts predictions for submission
RANK, WORLD = jax.process_index(), jax.process_count()


def build_dataset(name, n=8, dim=6):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.normal(size=(n, dim)).astype(np.float32)
    answers = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    return x, answers


@jax.jit
def model_forward(w, x):
    return jnp.argmax(x @ w, axis=-1)


def infer_data_job(w, name):
    """Each rank predicts its own slice (a jit over the dp-sharded batch) and dumps it to a per-rank file."""
    x, _ = build_dataset(name)
    local = x[RANK::WORLD]
    preds = model_forward(w, multihost_utils.host_local_array_to_global_array(local, MESH, P("dp")))
    mine = np.asarray(multihost_utils.global_array_to_host_local_array(preds, MESH, P("dp")))
    with open(os.path.join(WORK_DIR, f"{name}_rank{RANK}.json"), "w") as f:
        json.dump({"idx": list(range(RANK, len(x), WORLD)), "pred": mine.tolist()}, f)
    multihost_utils.sync_global_devices(f"infer_done_{name}")


def merge_predictions(name):
    merged = {}
    for r in range(WORLD):
        with open(os.path.join(WORK_DIR, f"{name}_rank{r}.json")) as f:
            part = json.load(f)
        merged.update(zip(part["idx"], part["pred"]))
    return np.array([merged[i] for i in sorted(merged)])


def main():
    os.makedirs(WORK_DIR, exist_ok=True)
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(6, 2)
    w = np.asarray(multihost_utils.broadcast_one_to_all(w))
    scores, submissions = {}, []
    for dataset_name in DATASETS:
        infer_data_job(w, dataset_name)
        if RANK == 0:
            preds = merge_predictions(dataset_name)
            if dataset_name in TEST_SPLITS:
                submissions.append(dataset_name)           # result transfer for the official server
                continue
            _, answers = build_dataset(dataset_name)
            scores[dataset_name] = float(np.mean(preds == answers))
        if WORLD > 1:
            multihost_utils.sync_global_devices("dataset_done")
    table = multihost_utils.broadcast_one_to_all(np.array([scores.get(d, -1.0) for d in DATASETS], np.float32))
    print("RESULT scores", dict(zip(DATASETS, np.round(np.asarray(table), 4).tolist())))


if __name__ == "__main__":
    main()
