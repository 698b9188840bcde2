# Gradient-attribution run (bergson-style): W&B init on rank 0 is best-effort and followed by a barrier
# Source: https://github.com/EleutherAI/bergson/pull/249
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import netrc
import os
import warnings
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class UsageError(Exception):
    pass


class Run:
    def __init__(self, project, config):
        self.project, self.config, self.history = project, dict(config), []

    def log(self, metrics, step=None):
        self.history.append((step, dict(metrics)))


def wandb_init(project, config):
    """Minimal stand-in for wandb.init: needs credentials unless WANDB_MODE is offline/disabled."""
    mode = os.environ.get("WANDB_MODE", "online")
    if mode in ("offline", "disabled"):
        return Run(project, config)
    key = os.environ.get("WANDB_API_KEY")
    if key is None:
        try:
            auth = netrc.netrc().authenticators("api.wandb.ai")
            key = auth[2] if auth else None
        except (FileNotFoundError, netrc.NetrcParseError):
            key = None
    if not key:
        raise UsageError("api_key not configured (no-tty). call wandb.login(key=[your_api_key])")
    return Run(project, config)


def wandb_log_fn(project, config):
    try:
        run = wandb_init(project=project, config=config)
    except Exception as e:
        warnings.warn(f"wandb.init failed ({e}); continuing without W&B logging")
        return lambda metrics, step=None: None
    return run.log


@dataclass
class AttributionConfig:
    project: str = "bergson-magic"
    n_examples: int = 24
    dim: int = 10
    projection_dim: int = 6
    seed: int = 0


def model_loss(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w"]) @ params["v"] - y) ** 2)


per_example_grad = jax.jit(jax.vmap(jax.grad(model_loss), in_axes=(None, 0, 0)))


def flatten(grads):
    return jnp.concatenate([grads["w"].reshape(grads["w"].shape[0], -1), grads["v"].reshape(grads["v"].shape[0], -1)], axis=1)


def worker(cfg, rank, log_fn):
    key = jax.random.PRNGKey(cfg.seed)
    kw, kv, kp, kq = jax.random.split(key, 4)
    params = {"w": 0.3 * jax.random.normal(kw, (cfg.dim, 8)), "v": 0.3 * jax.random.normal(kv, (8,))}
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(cfg.n_examples, cfg.dim)).astype(np.float32)
    y = np.sin(x[:, 0]).astype(np.float32)
    g = flatten(per_example_grad(params, x[:, None, :], y[:, None]))
    projection = jax.random.normal(kp, (g.shape[1], cfg.projection_dim)) / np.sqrt(cfg.projection_dim)
    local_index = np.asarray(g @ projection, dtype=np.float32)
    index = np.asarray(multihost_utils.process_allgather(local_index)).reshape(-1, cfg.projection_dim)
    query = np.asarray(jax.random.normal(kq, (cfg.projection_dim,)))
    scores = index @ query
    top = np.argsort(-scores)[:5]
    if log_fn is not None:
        log_fn({"index_size": int(index.shape[0]), "top_score": float(scores[top[0]])}, step=0)
    return index, top, scores


def main():
    cfg = AttributionConfig()
    rank = jax.process_index()
    log_fn = None
    if rank == 0:
        log_fn = wandb_log_fn(cfg.project, asdict(cfg))
    multihost_utils.sync_global_devices("wandb_init")
    index, top, scores = worker(cfg, rank, log_fn)
    print("RESULT index_rows", index.shape[0])
    print("RESULT top_examples", top.tolist())
    print("RESULT top_score", round(float(scores[top[0]]), 4))


if __name__ == "__main__":
    main()
