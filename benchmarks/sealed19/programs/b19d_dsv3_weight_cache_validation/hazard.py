# DeepSeek-V3-style MLP weight cache: convert sharded weights once, validate the cache, then serve a decode step
# Source: https://github.com/tenstorrent/tt-metal/pull/42512
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN, FFN = 8, 16
WEIGHT_NAMES = ("w1", "w2", "w3")


def local_weight_shard(name, rank, world):
    rng = np.random.default_rng(WEIGHT_NAMES.index(name))
    full = rng.normal(scale=0.2, size=(HIDDEN, FFN) if name != "w2" else (FFN, HIDDEN)).astype(np.float32)
    return np.array_split(full, world, axis=1 if name != "w2" else 0)[rank]


def dump_tensor(path, shard, axis):
    gathered = np.asarray(multihost_utils.process_allgather(shard))
    full = np.concatenate(list(gathered), axis=axis)
    if jax.process_index() == 0:
        np.save(path, full)
    multihost_utils.sync_global_devices(f"dump_tensor:{Path(path).name}")


def convert_weights(cache_dir):
    rank, world = jax.process_index(), jax.process_count()
    weight_config = {}
    for name in WEIGHT_NAMES:
        path = os.path.join(cache_dir, f"mlp.{name}.input_tensor_b.npy")
        dump_tensor(path, local_weight_shard(name, rank, world), axis=1 if name != "w2" else 0)
        weight_config[name] = path
    if rank == 0:
        Path(cache_dir, "config.json").write_text(json.dumps(weight_config))
    return weight_config


def validate_weight_config_paths(weight_config):
    for name, path in weight_config.items():
        if not Path(path).exists():
            raise ValueError(f"Missing weight file for {name}: {path}")


def load_weight(name, path):
    data = np.load(path) if jax.process_index() == 0 else None
    shape = (FFN, HIDDEN) if name == "w2" else (HIDDEN, FFN)
    return np.asarray(multihost_utils.broadcast_one_to_all(data if data is not None else np.zeros(shape, np.float32)))


def decode_step(weights, tokens, mesh):
    sharding = NamedSharding(mesh, P("dp"))
    x = jax.make_array_from_process_local_data(sharding, tokens)

    @jax.jit
    def mlp(x):
        h = jax.nn.silu(x @ weights["w1"]) * (x @ weights["w3"])
        return jnp.mean((h @ weights["w2"]) ** 2)

    return float(mlp(x))


def main():
    rank = jax.process_index()
    cache_dir = os.environ.get("DEEPSEEK_V3_CACHE") or tempfile.mkdtemp(prefix="deepseek_v3_cache_")
    weight_config = convert_weights(cache_dir)
    validate_weight_config_paths(weight_config)
    weights = {name: load_weight(name, path) for name, path in weight_config.items()}
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    tokens = np.random.default_rng(rank).normal(size=(2, HIDDEN)).astype(np.float32)
    energy = decode_step(weights, tokens, mesh)
    print("RESULT mlp_output_energy", round(energy, 5))
    print("RESULT w1_checksum", round(float(np.abs(weights["w1"]).sum()), 4))


if __name__ == "__main__":
    main()
