# vLLM-style fastsafetensors loader natural-sorts the node-local weight-file list before splitting it across ranks
# Source: https://github.com/vllm-project/vllm/pull/34190
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import json
import os
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SHARDS = {"model-00001-of-00004.npz": ("embed", (4, 3)), "model-00002-of-00004.npz": ("proj_in", (3, 4)),
          "model-00003-of-00004.npz": ("proj_out", (2, 5)), "model-00004-of-00004.npz": ("head", (5, 2))}


def _natural_sort_key(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def download_snapshot(local_dir):
    """Node-local copy of the checkpoint; parallel downloads finish in a host-dependent order."""
    os.makedirs(local_dir, exist_ok=True)
    names = sorted(SHARDS, key=_natural_sort_key)
    start = jax.process_index() % len(names)
    arrived = names[start:] + names[:start]
    for name in arrived:
        key, shape = SHARDS[name]
        seed = int(re.search(r"(\d+)-of", name).group(1))
        np.savez(os.path.join(local_dir, name), **{key: np.random.default_rng(seed).normal(size=shape).astype(np.float32)})
    with open(os.path.join(local_dir, "files.json"), "w") as fp:
        json.dump(arrived, fp)
    return local_dir


def list_weight_files(local_dir):
    with open(os.path.join(local_dir, "files.json")) as fp:
        return [os.path.join(local_dir, n) for n in json.load(fp)]


def fastsafetensors_weights_iterator(hf_weights_files, rank, world):
    hf_weights_files = sorted(hf_weights_files, key=_natural_sort_key)
    weight_files_sub_lists = [hf_weights_files[i:i + world] for i in range(0, len(hf_weights_files), world)]
    for group in weight_files_sub_lists:
        with np.load(group[rank]) as f:
            (key, mine), = f.items()
        gathered = np.asarray(multihost_utils.process_allgather(mine.reshape(-1)))
        for j, path in enumerate(group):
            key_j, shape_j = SHARDS[os.path.basename(path)]
            yield key_j, gathered[j].reshape(shape_j)


@jax.jit
def forward(params, x):
    h = jnp.tanh(x @ params["embed"] @ params["proj_in"])
    return h @ params["head"][:4] + jnp.sum(params["proj_out"])


def main():
    root = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_unsorted_weight_files_rank_split", os.environ.get("JOB_ID", "0"))
    local_dir = download_snapshot(os.path.join(root, f"node{jax.process_index()}"))
    hf_weights_files = list_weight_files(local_dir)
    params = dict(fastsafetensors_weights_iterator(hf_weights_files, jax.process_index(), jax.process_count()))
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep = NamedSharding(mesh, P())
    params = {k: jax.device_put(v, rep) for k, v in sorted(params.items())}
    x_local = np.random.default_rng(5 + jax.process_index()).normal(size=(3, 4)).astype(np.float32)
    out = forward(params, jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), x_local))
    out = np.asarray(multihost_utils.process_allgather(out, tiled=True))
    print("RESULT loaded", sorted(params))
    print("RESULT logits_sum", round(float(out.sum()), 4))


if __name__ == "__main__":
    main()
