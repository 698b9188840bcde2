# Reward-weighted (HDP-RL) fine-tuning of a trajectory planner under data parallelism (ordered loss keys)
# Source: https://github.com/tier4/Diffusion-Planner/pull/317
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import hashlib
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OBS_DIM, HORIZON = 6, 4
CONFIG = {"lr": 0.05, "rl_weight": 0.5, "bc_weight": 1.0, "temperature": 1.0, "replay_batches": 5, "batch": 16}


def init_planner(key):
    return {"w": 0.1 * jax.random.normal(key, (OBS_DIM, HORIZON)), "b": jnp.zeros((HORIZON,))}


def loss_terms(params, obs, expert, reward):
    traj = obs @ params["w"] + params["b"]
    err = jnp.mean((traj - expert) ** 2, axis=1)
    weights = jax.nn.softmax(reward / CONFIG["temperature"]) * reward.shape[0]
    reward_weighted_loss = jnp.mean(weights * err)
    bc_loss = jnp.mean(err)
    rl_loss = -jnp.mean(reward * jnp.exp(-err))
    loss = reward_weighted_loss + CONFIG["rl_weight"] * rl_loss + CONFIG["bc_weight"] * bc_loss
    return loss, {"reward_weighted_loss": reward_weighted_loss, "bc_loss": bc_loss, "rl_loss": rl_loss}


grad_fn = jax.jit(jax.value_and_grad(loss_terms, has_aux=True))


def all_reduce_mean(tree):
    return jax.tree_util.tree_map(lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), tree)


def _backward_reward_weighted_update(params, batches):
    objective_keys = ("loss", "rl_loss", "reward_weighted_loss", "bc_loss")
    sums = {k: 0.0 for k in objective_keys}
    for obs, expert, reward in batches:
        (loss, terms), grads = grad_fn(params, obs, expert, reward)
        grads = all_reduce_mean(grads)
        params = jax.tree_util.tree_map(lambda p, g: p - CONFIG["lr"] * g, params, grads)
        terms["loss"] = loss
        for key in objective_keys:
            sums[key] += float(terms[key])
    accumulated = {}
    for key in objective_keys:
        accumulated[key] = sums[key] / len(batches)
    return params, accumulated


def reduce_and_average_losses(losses):
    names = list(losses.keys())
    digest = np.frombuffer(hashlib.sha256("|".join(names).encode()).digest()[:8], dtype=np.int64)
    digests = np.asarray(multihost_utils.process_allgather(digest))
    if not (digests == digests[0]).all():
        raise RuntimeError("Distributed loss dictionaries have different keys or ordering")
    packed = np.array([losses[n] for n in names], dtype=np.float64)
    mean = np.asarray(multihost_utils.process_allgather(packed)).mean(axis=0)
    return dict(zip(names, mean.tolist()))


def replay_batches(rank):
    rng = np.random.default_rng(2024 + rank)
    for _ in range(CONFIG["replay_batches"]):
        obs = rng.normal(size=(CONFIG["batch"], OBS_DIM)).astype(np.float32)
        expert = (obs[:, :HORIZON] * 0.8).astype(np.float32)
        reward = rng.uniform(0, 1, size=(CONFIG["batch"],)).astype(np.float32)
        yield obs, expert, reward


def main():
    rank = jax.process_index()
    params = init_planner(jax.random.PRNGKey(0))
    for epoch in range(2):
        params, local_losses = _backward_reward_weighted_update(params, list(replay_batches(rank + 10 * epoch)))
        epoch_losses = reduce_and_average_losses(local_losses)
        print(f"epoch {epoch}: {epoch_losses}", flush=True)
    print("RESULT bc_loss", round(epoch_losses["bc_loss"], 5))
    print("RESULT loss", round(epoch_losses["loss"], 5))
    print("RESULT planner_checksum", round(float(jnp.sum(jnp.abs(params["w"]))), 4))


if __name__ == "__main__":
    main()
