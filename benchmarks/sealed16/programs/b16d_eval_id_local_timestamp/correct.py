# Multi-process VLM evaluation: rank 0's launch timestamp names the output directory of every process
# Source: https://github.com/open-compass/VLMEvalKit/issues/1540
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import datetime
import os
import tempfile
import time
from pathlib import Path

import numpy as np

RANK = int(os.environ["PROCESS_ID"])
LAUNCH_SKEW_S = 1.2   # torchrun-style launch: later ranks come up ~1 s after rank 0


def build_eval_id():
    return "T" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


time.sleep(LAUNCH_SKEW_S * RANK)
eval_id = build_eval_id()

import jax  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]), RANK)

DATASET = "MME"
NUM_SAMPLES = 12


def infer_shard(rank, world):
    """Each process answers its slice of the benchmark (a stand-in model: a deterministic score per sample)."""
    idx = np.arange(rank, NUM_SAMPLES, world)
    scores = (np.sin(idx * 0.7) > 0).astype(np.float32)
    return idx, scores


def write_shard(work_dir, rank, idx, scores):
    work_dir.mkdir(parents=True, exist_ok=True)
    np.savez(work_dir / f"{rank}{DATASET}.npz", idx=idx, scores=scores)


def merge_shards(work_dir, world):
    total, count = 0.0, 0
    for r in range(world):
        with np.load(work_dir / f"{r}{DATASET}.npz") as shard:
            total += float(shard["scores"].sum())
            count += int(shard["idx"].size)
    return total / count


def main(eval_id):
    rank, world = jax.process_index(), jax.process_count()
    # rank 0's eval_id is broadcast after the distributed runtime is up: one output directory for all ranks
    codes = np.frombuffer(eval_id.encode().ljust(32), dtype=np.uint8).astype(np.int32)
    codes = np.asarray(multihost_utils.broadcast_one_to_all(codes))
    eval_id = bytes(codes.astype(np.uint8).tolist()).decode().strip()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed16_eval_id_local_timestamp" / os.environ.get("JOB_ID", "0")
    work_dir = root / "outputs" / "qwen-vl" / eval_id
    idx, scores = infer_shard(rank, world)
    write_shard(work_dir, rank, idx, scores)
    multihost_utils.sync_global_devices("inference shards written")
    acc = merge_shards(work_dir, world) if rank == 0 else 0.0
    acc = float(multihost_utils.broadcast_one_to_all(np.float32(acc)))
    print("RESULT accuracy", round(acc, 4))


if __name__ == "__main__":
    main(eval_id)
