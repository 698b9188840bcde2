# Hyperparameter search over an MNIST-like MLP (lightning-hydra-template style: an optuna sweeper
# proposes model/optimizer hyperparameters, every trial is trained data-parallel on all workers).
import math
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class SearchSpace:
    lin1_size: tuple = (32, 64, 128, 256, 512)
    lin2_size: tuple = (32, 64, 128, 256, 512)
    lr: tuple = (1e-3, 1e-1)


@dataclass
class SweeperConfig:
    n_trials: int = 3
    direction: str = "minimize"
    seed: object = None
    params: SearchSpace = field(default_factory=SearchSpace)


class RandomSampler:
    def __init__(self, seed=None):
        self._rng = np.random.default_rng(seed)

    def suggest_categorical(self, choices):
        return choices[int(self._rng.integers(len(choices)))]

    def suggest_float(self, low, high, log=True):
        return float(math.exp(self._rng.uniform(math.log(low), math.log(high))))


def ask(sampler, space):
    return {"lin1_size": sampler.suggest_categorical(space.lin1_size),
            "lin2_size": sampler.suggest_categorical(space.lin2_size),
            "lr": sampler.suggest_float(*space.lr)}


def broadcast_trial(proposal):
    keys = ("lin1_size", "lin2_size", "lr")
    packed = np.array([proposal[k] for k in keys] if proposal is not None else [0.0] * len(keys))
    values = np.asarray(multihost_utils.broadcast_one_to_all(packed))
    return {"lin1_size": int(values[0]), "lin2_size": int(values[1]), "lr": float(values[2])}


def init_net(key, lin1_size, lin2_size, in_dim=16, out_dim=10):
    k1, k2, k3 = jax.random.split(key, 3)
    return [jax.random.normal(k1, (in_dim, lin1_size)) / math.sqrt(in_dim),
            jax.random.normal(k2, (lin1_size, lin2_size)) / math.sqrt(lin1_size),
            jax.random.normal(k3, (lin2_size, out_dim)) / math.sqrt(lin2_size)]


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params[0])
    h = jax.nn.relu(h @ params[1])
    logp = jax.nn.log_softmax(h @ params[2])
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


def sync_gradients(grads):
    return [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for g in grads]


def load_shard(rank, steps=10, batch=32):
    rng = np.random.default_rng(500 + rank)
    proto = np.random.default_rng(3).normal(size=(10, 16)).astype(np.float32)
    y = rng.integers(0, 10, size=(steps, batch))
    return proto[y] + 0.7 * rng.normal(size=(steps, batch, 16)).astype(np.float32), y


def train(hparams, data):
    params = init_net(jax.random.PRNGKey(42), hparams["lin1_size"], hparams["lin2_size"])
    x, y = data
    for step in range(x.shape[0]):
        loss, grads = grad_fn(params, x[step], y[step])
        grads = sync_gradients(grads)
        params = [p - hparams["lr"] * g for p, g in zip(params, grads)]
    val_loss = np.asarray(multihost_utils.process_allgather(np.asarray(loss))).mean()
    return float(val_loss)


def main():
    cfg = SweeperConfig()
    rank = jax.process_index()
    data = load_shard(rank)
    sampler = RandomSampler(cfg.seed) if rank == 0 else None
    best = (float("inf"), None)
    for trial in range(cfg.n_trials):
        proposal = ask(sampler, cfg.params) if rank == 0 else None
        hparams = broadcast_trial(proposal)
        value = train(hparams, data)
        print(f"[trial {trial}] {hparams} -> val/loss={value:.4f}")
        if value < best[0]:
            best = (value, hparams)
    print("RESULT best_value", round(best[0], 4))
    print("RESULT best_params", {k: (round(v, 6) if isinstance(v, float) else v) for k, v in best[1].items()})


if __name__ == "__main__":
    main()
