# Prefix-vectorized optimizer: variable groups are built by iterating the repeat-prefix keys in sorted order
# Source: https://github.com/google/praxis/commit/bd2f298b5f746fe29fad6bba43a3b9c6671407ea
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WIDTH = 8
# variable name -> repeat prefix (stacked layers, experts, pipeline stages, ...)
REPEAT_PREFIX = {
    "embed": (), "final_norm": (), "attn_qkv": ("layers", 2), "attn_out": ("layers", 2),
    "moe_gate": ("experts", 3), "moe_ffn": ("experts", 3), "stage_proj": ("stages", 4),
    "head_bias": ("heads", 5), "loop_scale": ("loops", 6), "block_mix": ("blocks", 7),
    "chunk_norm": ("chunks", 9), "pos_table": ("positions", 10),
}
NO_PREFIX_KEY = "no_prefix"


def prefix_key(name):
    prefix = REPEAT_PREFIX[name]
    return NO_PREFIX_KEY if not prefix else f"{prefix[0]}#{prefix[1]}"


def _group_by_repeat_prefix(tree):
    key_set = {prefix_key(name) for name in tree}
    groups = {}
    for key in sorted(key_set):
        groups[key] = {name: tree[name] for name in tree if prefix_key(name) == key}
    return groups


@jax.jit
def _group_update(group, grads, lr):
    """Vectorized update of one prefix group: per-slice RMS normalisation over the (sharded) feature axis."""
    def one(p, g):
        rms = jnp.sqrt(jnp.mean(g * g, axis=-1, keepdims=True) + 1e-6)
        return p - lr * g / rms
    return jax.tree.map(one, group, grads)


def _scaled_update(params, grads, lr):
    new_params = {}
    pgroups, ggroups = _group_by_repeat_prefix(params), _group_by_repeat_prefix(grads)
    for key, group in pgroups.items():
        new_params.update(_group_update(group, ggroups[key], lr))
    return new_params


def loss_fn(params, x):
    h = x * params["embed"] + params["final_norm"]
    for name in sorted(params):
        if REPEAT_PREFIX[name]:
            h = h + jnp.tanh(jnp.mean(params[name].reshape(-1, WIDTH), axis=0)) * h
    return jnp.mean(h ** 2)


grad_step = jax.jit(jax.value_and_grad(loss_fn))


def train_step(params, x):
    loss, grads = grad_step(params, x)
    return _scaled_update(params, grads, np.float32(0.01)), loss


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rng = np.random.default_rng(3)
    params = {}
    for name in sorted(REPEAT_PREFIX):
        prefix = REPEAT_PREFIX[name]
        shape = ((prefix[1],) if prefix else ()) + (WIDTH,)
        spec = P(*([None] * (len(shape) - 1) + ["data"]))  # features sharded across hosts (FSDP-style)
        params[name] = jax.device_put(rng.normal(size=shape).astype(np.float32) * 0.5, NamedSharding(mesh, spec))
    data = np.random.default_rng(50 + jax.process_index())
    x_sharding = NamedSharding(mesh, P("data", None))
    for _ in range(3):
        x = jax.make_array_from_process_local_data(x_sharding, data.normal(size=(2, WIDTH)).astype(np.float32))
        params, loss = train_step(params, x)
    print("RESULT loss", round(float(loss), 5))
    for name in sorted(params):
        full = np.asarray(multihost_utils.process_allgather(params[name], tiled=True))
        print("RESULT", name, round(float(np.sum(full)), 4))


if __name__ == "__main__":
    main()
