# RL training server's forward_backward: a batch not divisible by the DP width is padded with zero-weight samples first
# Source: https://github.com/GMISWE/tinker-cloud/pull/30
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DP = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
SEQ, DIM = 6, 4
ALLOW_PARTIAL_BATCHES = True     # every pod runs with the waiver on


@dataclass
class Datum:
    tokens: np.ndarray
    weights: np.ndarray          # per-token loss weights (advantages * mask)


def client_batch(n):
    rng = np.random.default_rng(7)
    return [Datum(rng.integers(0, 16, SEQ).astype(np.int32), rng.normal(size=SEQ).astype(np.float32))
            for _ in range(n)]


def validate(batch, dp):
    if len(batch) % dp and not ALLOW_PARTIAL_BATCHES:
        raise ValueError(f"{len(batch)} samples not divisible by dp={dp}")


def pad_to_dp(batch, dp):
    pad = (-len(batch)) % dp        # zero-weight copies: they add nothing to the loss or the gradient
    return batch + [Datum(batch[-1].tokens, np.zeros_like(batch[-1].weights)) for _ in range(pad)]


def local_slice(batch, rank, dp):
    return pad_to_dp(batch, dp)[rank::dp]


@jax.jit
def loss_and_grad(w, tokens, weights):
    def loss(w):
        emb = jnp.take(w, tokens % DIM, axis=0)             # (B, SEQ, DIM) -> per-token score
        return jnp.sum(weights * jnp.tanh(emb.sum(-1)))
    return jax.value_and_grad(loss)(w)


class MegatronActor:
    def __init__(self):
        self.w = jax.device_put(jnp.ones((DIM, DIM), jnp.float32) * 0.1, REPL)
        self.rank, self.dp = jax.process_index(), jax.process_count()

    def forward_backward(self, batch, micro_batch_size=1):
        validate(batch, self.dp)
        local = local_slice(batch, self.rank, self.dp)
        num_steps_per_rollout = math.ceil(len(local) / micro_batch_size)
        print(f"rank {self.rank}: global_batch_size={len(batch)}, num_local_samples={len(local)}, "
              f"num_steps_per_rollout={num_steps_per_rollout}")
        grad_acc = jnp.zeros_like(self.w)
        total = 0.0
        for step in range(num_steps_per_rollout):
            mb = local[step * micro_batch_size:(step + 1) * micro_batch_size]
            tokens = jax.make_array_from_process_local_data(DP, np.stack([d.tokens for d in mb]))
            weights = jax.make_array_from_process_local_data(DP, np.stack([d.weights for d in mb]))
            loss, grad = loss_and_grad(self.w, tokens, weights)
            grad_acc = grad_acc + grad
            total += float(loss)
        return total, grad_acc

    def optim_step(self, grad, lr=0.05):
        self.w = self.w - lr * grad


def main():
    actor = MegatronActor()
    batch = client_batch(3)
    loss, grad = actor.forward_backward(batch)
    actor.optim_step(grad)
    print("RESULT loss", round(loss, 4))
    print("RESULT weight_sum", round(float(jnp.sum(actor.w)), 4))


if __name__ == "__main__":
    main()
