# Dynamic batching with a MAX-synced micro-batch count: a light rank cannot form that many partitions
# Source: https://github.com/hiyouga/EasyR1/pull/11012 (fixes EasyR1 issue 11004; port of a PyTorch DP deadlock to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DP = NamedSharding(MESH, P("dp"))


class MicroBatch(dict):
    @property
    def num_tokens(self) -> int:
        return int(np.sum(self["attention_mask"]))


def get_seqlen_balanced_partitions(seqlens, k):
    order = sorted(range(len(seqlens)), key=lambda i: -seqlens[i])
    parts, loads = [[] for _ in range(k)], [0] * k
    for i in order:
        j = loads.index(min(loads))
        parts[j].append(i)
        loads[j] += seqlens[i]
    return parts


def rearrange_micro_batches(batch, max_token_len):
    effective_seqlen = batch["attention_mask"].sum(axis=1).tolist()
    num_micro_batches = max(1, -(-int(sum(effective_seqlen)) // max_token_len))
    counts = multihost_utils.process_allgather(np.int32(num_micro_batches))
    num_micro_batches = int(np.max(counts))  # every dp rank must run the same number of steps
    num_real = min(num_micro_batches, len(effective_seqlen))
    parts = get_seqlen_balanced_partitions(effective_seqlen, num_real)
    mbs = [MicroBatch(attention_mask=batch["attention_mask"][p]) for p in parts]
    while len(mbs) < num_micro_batches:  # dummy 1-row micro-batches with a zero mask keep the step count
        mbs.append(MicroBatch(attention_mask=np.zeros_like(batch["attention_mask"][:1])))
    return mbs


@jax.jit
def policy_forward(w, tokens):
    return jnp.mean(tokens) * jnp.sum(w)  # sharded weight is gathered: a collective over dp


class Actor:
    def __init__(self, max_token_len: int):
        self.max_token_len = max_token_len
        self.w = jax.make_array_from_process_local_data(DP, np.ones((4,), np.float32))

    def update_policy(self, batch):
        total = 0.0
        for mb in rearrange_micro_batches(batch, self.max_token_len):
            tok = np.full((8,), float(mb.num_tokens), np.float32)
            total += float(policy_forward(self.w, jax.make_array_from_process_local_data(DP, tok)))
        return total


def make_rollout(pid):
    # image rollouts are short, video rollouts carry many visual tokens: the ranks get very uneven loads
    if pid == 0:
        return {"attention_mask": np.ones((8, 48), np.int32)}
    return {"attention_mask": np.ones((2, 16), np.int32)}


def main():
    pid = jax.process_index()
    actor = Actor(max_token_len=96)
    loss = actor.update_policy(make_rollout(pid))
    total = multihost_utils.process_allgather(np.float32(loss))
    print(f"RESULT loss_sum={float(np.sum(total)):.3f}")
    print("RESULT update_done")


if __name__ == "__main__":
    main()
