# FSDP-style HF weight export with rank0_only: non-zero ranks return from the export generator before the per-tensor all-gathers
# Source: https://github.com/ISEEKYAN/Megatron-LM/pull/82
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import tempfile
from collections import OrderedDict

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK, WORLD = jax.process_index(), jax.process_count()
OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_rank0_only_export", os.environ.get("JOB_ID", "0"))

FULL_SHAPES = OrderedDict([("model.embed_tokens.weight", (8, 4)),
                           ("model.layers.0.mlp.up_proj.weight", (6, 4)),
                           ("lm_head.weight", (8, 4))])


def local_shards():
    # dim-0 sharding, as fully-sharded data parallel keeps the parameters
    shards = OrderedDict()
    for k, (name, shape) in enumerate(FULL_SHAPES.items()):
        full = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 10 * k) / 10.0
        rows = shape[0] // WORLD
        shards[name] = full[RANK * rows:(RANK + 1) * rows]
    return shards


def full_tensor(shard):
    # all-gather of the dim-0 shards: every rank must take part
    return np.asarray(multihost_utils.process_allgather(shard, tiled=True))


def iter_hf_state_tensors(shards, rank0_only):
    if rank0_only and RANK != 0:
        return
    for name, shard in shards.items():
        tensor = full_tensor(shard)
        if rank0_only and RANK != 0:
            continue
        yield name, tensor


def save_hf_weights(shards, out_dir):
    index = {}
    for name, tensor in iter_hf_state_tensors(shards, rank0_only=True):
        os.makedirs(out_dir, exist_ok=True)
        np.save(os.path.join(out_dir, name + ".npy"), tensor)
        index[name] = [list(tensor.shape), round(float(tensor.sum()), 3)]
    if RANK == 0:
        with open(os.path.join(out_dir, "model.index.json"), "w") as f:
            json.dump(index, f)
    return index


def main():
    shards = local_shards()
    index = save_hf_weights(shards, OUT_DIR)
    n_saved = int(multihost_utils.broadcast_one_to_all(np.int32(len(index))))
    total = float(multihost_utils.broadcast_one_to_all(
        np.float32(sum(v[1] for v in index.values()) if index else 0.0)))
    print("RESULT exported_tensors", n_saved)
    print("RESULT exported_sum", round(total, 3))


if __name__ == "__main__":
    main()
