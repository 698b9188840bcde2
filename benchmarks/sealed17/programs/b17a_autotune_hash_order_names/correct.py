# Profile-guided scheduling: op ids are assigned in sorted (process-independent) order before per-id costs are reduced
# Source: https://github.com/openxla/xla/pull/36755
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ASYNC_THRESHOLD_US = 40.0

MODEL_OPS = [
    ("attn_qkv_proj", (256, 768)), ("attn_softmax", (64, 64)), ("attn_out_proj", (256, 256)),
    ("mlp_up", (256, 1024)), ("mlp_gelu", (32, 1024)), ("mlp_down", (1024, 256)),
    ("layernorm_1", (16, 256)), ("layernorm_2", (16, 256)), ("embed_gather", (512, 64)),
    ("logits_proj", (256, 2048)), ("loss_xent", (32, 2048)), ("grad_allreduce", (128, 512)),
]


def collect_fusions(ops):
    """The distinct fusion kinds of the module (the autotuner's candidate set)."""
    return {name for name, _ in ops}


def assign_ids(fusions):
    return {name: f"fusion.{i}" for i, name in enumerate(sorted(fusions))}


def local_cost_us(name, ops):
    rows, cols = dict(ops)[name]
    return rows * cols / 4096.0  # cost model of this host's measurement


def profile(ids, ops):
    """Per-id costs, reduced (max over processes) so every process schedules from the same profile."""
    by_id = sorted(ids.items(), key=lambda kv: int(kv[1].split(".")[1]))
    local = np.array([local_cost_us(name, ops) for name, _ in by_id], np.float32)
    gathered = np.asarray(multihost_utils.process_allgather(local))
    worst = gathered.max(axis=0)
    return {fid: float(worst[i]) for i, (_, fid) in enumerate(by_id)}


def schedule(ids, costs):
    return sorted(name for name, fid in ids.items() if costs[fid] > ASYNC_THRESHOLD_US)


def main():
    mesh = Mesh(np.array(jax.devices()), ("x",))
    fusions = collect_fusions(MODEL_OPS)
    ids = assign_ids(fusions)
    costs = profile(ids, MODEL_OPS)
    async_ops = schedule(ids, costs)
    # the schedule picks how many microbatches overlap the async collectives
    n_micro = 1 + len(async_ops)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")),
                                               np.ones((n_micro, 4), np.float32) * (jax.process_index() + 1))
    total = jax.jit(lambda a: jnp.sum(a), out_shardings=NamedSharding(mesh, P()))(x)
    print("RESULT async_ops", async_ops)
    print("RESULT profile", [(name, round(costs[ids[name]], 2)) for name in sorted(ids)])
    print("RESULT total", float(total.addressable_shards[0].data))


if __name__ == "__main__":
    main()
