# Dynamic micro-batching in the actor update: the micro-batch count is synced only when dp_group is passed
# Source: https://github.com/verl-project/verl/issues/6176 (port of a verl FSDP deadlock to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DP_SHARDED = NamedSharding(MESH, P("dp"))
DP_GROUP = "world"


@dataclass
class ActorConfig:
    ppo_max_token_len_per_gpu: int = 64
    use_dynamic_bsz: bool = True


def get_seqlen_balanced_partitions(seqlens, k):
    order = sorted(range(len(seqlens)), key=lambda i: -seqlens[i])
    parts, loads = [[] for _ in range(k)], [0] * k
    for i in order:
        j = loads.index(min(loads))
        parts[j].append(i)
        loads[j] += seqlens[i]
    return parts


def prepare_dynamic_batch(seqlens, max_token_len, dp_group=None, same_micro_num_in_dp=True):
    num_micro_batches = max(1, -(-int(sum(seqlens)) // max_token_len))
    if same_micro_num_in_dp and dp_group is not None:
        counts = multihost_utils.process_allgather(np.int32(num_micro_batches))
        num_micro_batches = int(np.max(counts))
    num_micro_batches = min(num_micro_batches, len(seqlens))
    return get_seqlen_balanced_partitions(seqlens, num_micro_batches)


@jax.jit
def forward_backward(w, tokens):
    # the sharded weight is all-gathered for the forward: a collective over every dp rank
    return jnp.mean(tokens * jnp.sum(w))


class DataParallelActor:
    def __init__(self, config: ActorConfig):
        self.config = config
        self.w = jax.make_array_from_process_local_data(DP_SHARDED, np.ones((4,), np.float32))

    def update_policy(self, seqlens):
        micro_batches = prepare_dynamic_batch(seqlens, max_token_len=self.config.ppo_max_token_len_per_gpu,
                                              dp_group=DP_GROUP)
        losses = []
        for mb in micro_batches:
            tok = np.full((8,), float(sum(seqlens[i] for i in mb)), np.float32)
            loss = forward_backward(self.w, jax.make_array_from_process_local_data(DP_SHARDED, tok))
            losses.append(float(loss))
        return len(micro_batches), float(np.sum(losses))


def main():
    pid = jax.process_index()
    rng = np.random.default_rng(1234 + pid)  # rollouts differ per rank: that is what dp means
    seqlens = [int(x) for x in rng.integers(4, 40, size=8)] if pid == 0 else [8] * 8
    actor = DataParallelActor(ActorConfig())
    n_micro, loss = actor.update_policy(seqlens)
    total = multihost_utils.process_allgather(np.float32(loss))
    print(f"RESULT loss_sum={float(np.sum(total)):.3f}")
    print("RESULT update_done")


if __name__ == "__main__":
    main()
