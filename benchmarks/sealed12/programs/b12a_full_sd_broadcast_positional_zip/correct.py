# Loading a full state dict: rank 0 looks its checkpoint entries up by the model keys, skipping quantization sidecars
# Source: https://github.com/huggingface/accelerate/pull/3982
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_full_sd_broadcast_positional_zip",
                    os.environ.get("JOB_ID", "local"), "full_state_dict.json")
MODEL_SHAPES = {"q_proj.weight": (4,), "q_proj.lora_A.weight": (2,), "q_proj.lora_B.weight": (2,)}


def write_full_checkpoint():
    """Rank 0's full state dict, as the quantized base model stores it: each 4-bit weight has an absmax sidecar."""
    if jax.process_index() == 0:
        os.makedirs(os.path.dirname(CKPT), exist_ok=True)
        full = {"q_proj.weight": [0.5, -0.25, 0.75, 1.0], "q_proj.weight.absmax": [1.0],
                "q_proj.lora_A.weight": [0.1, 0.2], "q_proj.lora_B.weight": [0.0, 0.0]}
        with open(CKPT, "w") as f:
            json.dump(full, f)
    multihost_utils.sync_global_devices("full checkpoint written")


def meta_sharded_state_dict():
    """What every rank has after sharding the model on the meta device: the keys and shapes only."""
    return {name: np.zeros(shape, np.float32) for name, shape in MODEL_SHAPES.items()}


def load_full_state_dict(meta_sd):
    loaded = {}
    if jax.process_index() == 0:
        with open(CKPT) as f:
            full_sd = {k: np.asarray(v, np.float32) for k, v in json.load(f).items()}
        for name, _meta in meta_sd.items():
            loaded[name] = multihost_utils.broadcast_one_to_all(full_sd[name])
    else:
        for name, meta in meta_sd.items():
            loaded[name] = multihost_utils.broadcast_one_to_all(meta)
    return loaded


def shard_params(loaded, mesh):
    sharding = NamedSharding(mesh, P("fsdp"))
    out = {}
    for name in MODEL_SHAPES:
        full = np.asarray(loaded[name], np.float32)
        half = full.shape[0] // 2
        local = full[jax.process_index() * half:(jax.process_index() + 1) * half]
        out[name] = jax.make_array_from_process_local_data(sharding, local)
    return out


def main():
    write_full_checkpoint()
    mesh = jax.make_mesh((jax.device_count(),), ("fsdp",))
    params = shard_params(load_full_state_dict(meta_sharded_state_dict()), mesh)
    norm = jax.jit(lambda w, a, b: jnp.sum(w * w) + jnp.sum(a * b) + jnp.sum(a),
                   out_shardings=NamedSharding(mesh, P()))
    value = norm(params["q_proj.weight"], params["q_proj.lora_A.weight"], params["q_proj.lora_B.weight"])
    print("RESULT loaded_keys", sorted(MODEL_SHAPES))
    print("RESULT param_norm", round(float(value), 5))


main()
