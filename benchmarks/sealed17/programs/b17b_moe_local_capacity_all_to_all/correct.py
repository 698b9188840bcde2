# DeepSpeed-style top-1 MoE gating with drop_tokens=False: the local max expert count is max-reduced across the EP group
# Source: https://github.com/deepspeedai/DeepSpeed/issues/6809
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_EXPERTS = 2  # one expert per process (ep_size == world size)
D_MODEL = 4


def top1gating(logits, drop_tokens, capacity_factor=1.0):
    num_tokens = logits.shape[0]
    expert = np.argmax(logits, axis=1)
    exp_counts = np.bincount(expert, minlength=NUM_EXPERTS)
    capacity = int(np.ceil(num_tokens / NUM_EXPERTS * capacity_factor))
    if not drop_tokens:
        new_capacity = np.int32(exp_counts.max())
        new_capacity = int(np.asarray(multihost_utils.process_allgather(new_capacity)).max())  # all_reduce(MAX, ep_group)
        capacity = new_capacity
    dispatch = np.zeros((NUM_EXPERTS, capacity), np.int32) - 1
    fill = np.zeros(NUM_EXPERTS, np.int32)
    for tok, e in enumerate(expert):
        if fill[e] < capacity:
            dispatch[e, fill[e]] = tok
            fill[e] += 1
    return dispatch


def make_all_to_all(mesh):
    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=P("ep"), out_specs=P("ep"))
    def all_to_all(x):  # x: [1, experts, capacity, d] per process -> tokens for the local expert from every process
        return jax.lax.all_to_all(x, "ep", split_axis=1, concat_axis=1, tiled=True)
    return all_to_all


def expert_ffn(w, tokens):
    return np.tanh(tokens @ w)


def moe_layer(x_local, gate_w, expert_w, all_to_all, sharding, drop_tokens):
    dispatch = top1gating(x_local @ gate_w, drop_tokens)
    buf = np.where(dispatch[..., None] >= 0, x_local[np.maximum(dispatch, 0)], 0.0).astype(np.float32)
    received = all_to_all(jax.make_array_from_process_local_data(sharding, buf[None]))
    mine = np.asarray(received.addressable_data(0))[0]  # [experts(sources), capacity, d]
    out = expert_ffn(expert_w, mine)
    returned = all_to_all(jax.make_array_from_process_local_data(sharding, out[None].astype(np.float32)))
    back = np.asarray(returned.addressable_data(0))[0]
    y = np.zeros_like(x_local)
    for e in range(NUM_EXPERTS):
        for slot, tok in enumerate(dispatch[e]):
            if tok >= 0:
                y[tok] = back[e, slot]
    return y


def main():
    mesh = Mesh(np.array(jax.devices()), ("ep",))
    sharding = NamedSharding(mesh, P("ep"))
    all_to_all = make_all_to_all(mesh)
    rng = np.random.default_rng(0)
    gate_w = rng.normal(size=(D_MODEL, NUM_EXPERTS)).astype(np.float32)
    expert_w = np.random.default_rng(100 + jax.process_index()).normal(size=(D_MODEL, D_MODEL)).astype(np.float32)
    totals = []
    for step in range(3):
        x_local = np.random.default_rng(1000 * step + jax.process_index()).normal(size=(6, D_MODEL)).astype(np.float32)
        y = moe_layer(x_local, gate_w, expert_w, all_to_all, sharding, drop_tokens=False)
        totals.append(float(np.asarray(multihost_utils.process_allgather(np.float32(np.abs(y).sum()))).sum()))
    print("RESULT moe_output_abs_sums", [round(t, 4) for t in totals])


if __name__ == "__main__":
    main()
