# Automodel-style expert-parallel MoE block: a process whose local expert got zero tokens still joins the combine with an empty part
# Source: https://github.com/NVIDIA-NeMo/Automodel/pull/3680
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

D = 4
TOKENS_PER_PROCESS = 5


@jax.jit
def router_logits(gate_w, x):
    return x @ gate_w


@jax.jit
def expert_mlp(w1, w2, tokens):
    return jnp.tanh(tokens @ w1) @ w2


class GroupedExpertsEP:
    """One expert per process; dispatch gathers routed tokens, combine returns expert outputs to their owners."""

    def __init__(self, expert_index, w1, w2):
        self.expert_index, self.w1, self.w2 = expert_index, w1, w2

    def dispatch(self, x_local, expert_ids_local):
        all_x = np.asarray(multihost_utils.process_allgather(x_local)).reshape(-1, D)
        all_ids = np.asarray(multihost_utils.process_allgather(expert_ids_local)).reshape(-1)
        return all_x, np.nonzero(all_ids == self.expert_index)[0]

    def combine(self, rows, outputs, total_tokens):
        buf = np.zeros((total_tokens, D), np.float32)
        buf[rows] = outputs
        return np.asarray(multihost_utils.process_allgather(buf)).sum(axis=0)

    def forward(self, x_local, expert_ids_local):
        all_x, rows = self.dispatch(x_local, expert_ids_local)
        if len(rows) == 0:
            # zero-local-tokens path: nothing to compute, but the combine below is entered all the same
            outputs = np.zeros((0, D), np.float32)
        else:
            outputs = np.asarray(expert_mlp(self.w1, self.w2, all_x[rows]))
        full = self.combine(rows, outputs, all_x.shape[0])
        lo = jax.process_index() * TOKENS_PER_PROCESS
        return full[lo:lo + TOKENS_PER_PROCESS]


def main():
    mesh = Mesh(np.array(jax.devices()), ("ep",))
    rng = np.random.default_rng(0)
    gate_w = np.array([[3.0, -3.0]] + [[0.0, 0.0]] * (D - 1), np.float32)  # host weights: the router runs on the local device
    w_rng = np.random.default_rng(50 + jax.process_index())
    layer = GroupedExpertsEP(jax.process_index(), w_rng.normal(size=(D, 8)).astype(np.float32),
                             w_rng.normal(size=(8, D)).astype(np.float32))
    sums = []
    for step in range(3):
        x_local = rng.normal(size=(2, TOKENS_PER_PROCESS, D)).astype(np.float32)[jax.process_index()]
        if step == 1:
            x_local[:, 0] = np.abs(x_local[:, 0]) + 1.0  # a skewed micro-batch: the router sends everything to expert 0
        logits = np.asarray(router_logits(gate_w, x_local))
        expert_ids = np.argmax(logits, axis=1).astype(np.int32)
        y = layer.forward(x_local, expert_ids)
        sums.append(float(np.asarray(multihost_utils.process_allgather(np.float32(np.abs(y).sum()))).sum()))
    print("RESULT moe_abs_sums", [round(s, 4) for s in sums])


if __name__ == "__main__":
    main()
