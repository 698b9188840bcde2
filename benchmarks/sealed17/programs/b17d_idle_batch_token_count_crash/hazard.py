# DP-attention scheduler: an idle DP rank's batch falls through to the extend path and crashes before the MLP-sync all-gather
# Source: https://github.com/sgl-project/sglang/pull/25404
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import enum
import os
from dataclasses import dataclass, field
from typing import List, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ForwardMode(enum.Enum):
    EXTEND = 1
    DECODE = 2
    IDLE = 4
    PREBUILT = 5

    def is_idle(self):
        return self is ForwardMode.IDLE

    def is_prebuilt(self):
        return self is ForwardMode.PREBUILT


@dataclass
class ScheduleBatch:
    forward_mode: ForwardMode
    seq_lens: List[int] = field(default_factory=list)
    extend_logprob_start_lens: Optional[List[int]] = None


@dataclass
class ServerArgs:
    hidden: int = 4
    num_steps: int = 3
    # the disaggregated decode router put every decode request on DP rank 0
    decode_work: dict = field(default_factory=lambda: {0: [6, 3, 2], 1: []})


def local_num_tokens(local_batch):
    if local_batch is None or local_batch.forward_mode.is_prebuilt():
        return 0
    # extend path: count the tokens whose logprobs are computed
    return int(sum(n - s for n, s in zip(local_batch.seq_lens, local_batch.extend_logprob_start_lens)))


def prepare_mlp_sync_batch(local_batch):
    num_tokens = local_num_tokens(local_batch)
    global_tokens = multihost_utils.process_allgather(np.array([num_tokens], np.int32)).reshape(-1)
    return global_tokens


def moe_mlp(x, w):
    return jnp.sum(jax.nn.gelu(x @ w))


class Scheduler:
    def __init__(self, args, rank, mesh):
        self.args = args
        self.queue = list(args.decode_work[rank])
        self.sharding = NamedSharding(mesh, P("dp", None))
        self.w = jnp.asarray(np.linspace(-1.0, 1.0, args.hidden * args.hidden, dtype=np.float32)
                             .reshape(args.hidden, args.hidden))
        self.mlp = jax.jit(moe_mlp)

    def get_next_batch(self):
        if self.queue:
            n = self.queue.pop(0)
            return ScheduleBatch(ForwardMode.EXTEND, seq_lens=[n], extend_logprob_start_lens=[0])
        return ScheduleBatch(ForwardMode.IDLE)

    def run_step(self):
        batch = self.get_next_batch()
        global_tokens = prepare_mlp_sync_batch(batch)
        pad_to = int(global_tokens.max())
        local = np.zeros((max(pad_to, 1), self.args.hidden), np.float32)
        n = local_num_tokens(batch) if not batch.forward_mode.is_idle() else 0
        local[:n] = np.arange(1, n + 1, dtype=np.float32)[:, None] / 10.0
        x = jax.make_array_from_process_local_data(self.sharding, local)
        return [int(t) for t in global_tokens], float(self.mlp(x, self.w))


def main():
    args = ServerArgs()
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    sched = Scheduler(args, jax.process_index(), mesh)
    for step in range(args.num_steps):
        tokens, out = sched.run_step()
        print("RESULT step", step, "tokens", tokens, "mlp", round(out, 4))
    multihost_utils.sync_global_devices("scheduler done")


if __name__ == "__main__":
    main()
