# Target-loss early stop reads a validation loss that was never reduced across data-parallel ranks
# Source: https://github.com/AMD-AGI/Primus/pull/854
# Written for the mcjax sealed4 evaluation (not copied): a port of a Megatron-LM/Primus (torch.distributed) trainer
# bug to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import os
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())
TRUE_W = np.array([1.5, -2.0, 0.5, 1.0], np.float32)


def get_args():
    return types.SimpleNamespace(train_iters=40, eval_interval=5, eval_iters=3, lr=0.02,
                                 target_eval_loss=1.6, _eval_val_loss=None)


def data_parallel_shard(seed: int, rows: int):
    # each data-parallel rank reads its own slice of the corpus; rank 1's slice is noisier
    rng = np.random.default_rng(seed * 7 + jax.process_index())
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    noise = (0.5 + 1.0 * jax.process_index()) * rng.normal(size=(rows,)).astype(np.float32)
    return x, (x @ TRUE_W + noise).astype(np.float32)


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    grad_norm = jnp.sqrt(jnp.sum(g * g))  # the global grad-norm all-reduce
    return w - 0.15 * g / jnp.maximum(1.0, grad_norm), loss


@jax.jit
def local_loss_terms(w, x, y):
    return jnp.sum((x @ w - y) ** 2), jnp.float32(x.shape[0])


def evaluate(args, w_local, step):
    total_loss_numerators, total_loss_denominators = 0.0, 0.0
    for i in range(args.eval_iters):
        x, y = data_parallel_shard(10_000 + i, 32)
        num, den = local_loss_terms(w_local, x, y)
        total_loss_numerators += float(num)
        total_loss_denominators += float(den)
    args._eval_val_loss = total_loss_numerators / total_loss_denominators
    print(f"step {step}: validation loss {args._eval_val_loss:.4f}")


def train(args):
    w = jax.device_put(jnp.zeros((4,), jnp.float32), REPLICATED)
    iteration = 0
    while iteration < args.train_iters:
        x, y = data_parallel_shard(iteration, 16)
        w, _ = train_step(w, jax.make_array_from_process_local_data(DATA, x),
                          jax.make_array_from_process_local_data(DATA, y))
        iteration += 1
        if iteration % args.eval_interval == 0:
            evaluate(args, np.asarray(w.addressable_data(0)), iteration)
            if args.target_eval_loss is not None and args._eval_val_loss <= args.target_eval_loss:
                print(f"reached target eval loss at iteration {iteration}")
                break
    return w, iteration


args = get_args()
w, iteration = train(args)
multihost_utils.sync_global_devices("end_of_training")
print("RESULT iteration", iteration)
print("RESULT w", np.round(np.asarray(w), 4).tolist())
