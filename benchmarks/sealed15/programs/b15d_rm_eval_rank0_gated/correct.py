# DeepSpeed-Chat step-2 reward-model finetuning: the periodic reward evaluation is run by every process, only the logging is rank-0
# Source: https://github.com/l294265421/alpaca-rlhf/issues/5
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


@dataclass
class Args:
    dim: int = 6
    per_device_batch: int = 4
    steps: int = 6
    eval_every: int = 3
    lr: float = 0.2
    global_rank: int = jax.process_index()


def pairs(args, seed, n):
    rng = np.random.default_rng(seed)
    chosen = rng.normal(0.5, 1.0, size=(n, args.dim)).astype(np.float32)
    rejected = rng.normal(-0.5, 1.0, size=(n, args.dim)).astype(np.float32)
    return chosen, rejected


@jax.jit
def rm_train_step(w, chosen, rejected, lr):
    def loss_fn(w):
        return -jnp.mean(jax.nn.log_sigmoid(chosen @ w - rejected @ w))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - lr * g, loss


@jax.jit
def rm_eval_batch(w, chosen, rejected):
    c, r = chosen @ w, rejected @ w
    return jnp.mean(c), jnp.mean(r), jnp.mean((c > r).astype(jnp.float32))


def evaluation_reward(w, args):
    """Every process scores its own eval shard; the means are reductions over all processes."""
    scores, rejs, accs = [], [], []
    for b in range(2):
        c, r = pairs(args, 500 + 10 * b + args.global_rank, args.per_device_batch)
        s, rj, a = rm_eval_batch(w, jax.make_array_from_process_local_data(ROWS, c),
                                 jax.make_array_from_process_local_data(ROWS, r))
        scores.append(float(s)); rejs.append(float(rj)); accs.append(float(a))
    return float(np.mean(scores)), float(np.mean(rejs)), float(np.mean(accs))


def main():
    args = Args()
    w = jax.device_put(np.zeros((args.dim,), np.float32), REPL)
    evals = []
    for step in range(args.steps):
        c, r = pairs(args, 10 * step + args.global_rank, args.per_device_batch)
        w, loss = rm_train_step(w, jax.make_array_from_process_local_data(ROWS, c),
                                jax.make_array_from_process_local_data(ROWS, r), args.lr)
        if (step + 1) % args.eval_every == 0:
            reward_score, rejected_score, acc = evaluation_reward(w, args)      # every process evaluates
            if args.global_rank == 0:
                print(f"Eval/reward_score {reward_score:.4f} Eval/rejected {rejected_score:.4f} Eval/acc {acc:.3f}")
            evals.append(round(acc, 3))
    print("RESULT final_loss", round(float(loss), 4))
    print("RESULT eval_acc", evals)


if __name__ == "__main__":
    main()
