# Momentum-contrast pretraining: query/key encoders, gradients averaged across workers every step
# Source: https://github.com/bl0/moco/issues/4
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def parse_args():
    parser = argparse.ArgumentParser(description="MoCo pretraining")
    parser.add_argument("--seed", type=int, default=None, help="seed for initializing training")
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--moco-m", type=float, default=0.9)
    parser.add_argument("--moco-t", type=float, default=0.2)
    return parser.parse_args([])


def init_encoder(key, in_dim, dim):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (in_dim, 16)) * 0.3, "w2": jax.random.normal(k2, (16, dim)) * 0.3}


def encode(params, x):
    h = jnp.tanh(x @ params["w1"]) @ params["w2"]
    return h / jnp.linalg.norm(h, axis=1, keepdims=True)


def contrastive_loss(q_params, k_params, x_q, x_k, temperature):
    q = encode(q_params, x_q)
    k = jax.lax.stop_gradient(encode(k_params, x_k))
    logits = q @ k.T / temperature
    return -jnp.mean(jnp.diag(jax.nn.log_softmax(logits, axis=1)))


def augment(rng, x):
    return x + 0.1 * rng.normal(size=x.shape).astype(np.float32)


def main():
    args = parse_args()
    rank = jax.process_index()
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (2 ** 31))
    q_params = init_encoder(jax.random.PRNGKey(seed), 12, args.dim)
    k_params = jax.tree_util.tree_map(lambda p: p, q_params)
    data_rng = np.random.default_rng(1000 + rank)
    images = data_rng.normal(size=(args.steps, args.batch_size, 12)).astype(np.float32)
    grad_fn = jax.jit(jax.value_and_grad(contrastive_loss), static_argnums=4)

    for step in range(args.steps):
        x = images[step]
        loss, grads = grad_fn(q_params, k_params, augment(data_rng, x), augment(data_rng, x), args.moco_t)
        # average gradients across workers (DistributedDataParallel all-reduce)
        flat, treedef = jax.tree_util.tree_flatten(grads)
        gathered = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for g in flat]
        grads = jax.tree_util.tree_unflatten(treedef, gathered)
        q_params = jax.tree_util.tree_map(lambda p, g: p - args.lr * g, q_params, grads)
        k_params = jax.tree_util.tree_map(lambda k, q: args.moco_m * k + (1 - args.moco_m) * q, k_params, q_params)

    checksum = float(sum(jnp.sum(jnp.abs(p)) for p in jax.tree_util.tree_leaves(q_params)))
    print("RESULT steps", args.steps)
    print("RESULT encoder_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
