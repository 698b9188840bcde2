# Resume from the last run: the experiment log dir is only resolved on rank 0, so only rank 0 restores the checkpoint
# Source: https://github.com/mlcommons/algorithmic-efficiency/issues/412
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RANK = jax.process_index()
MESH = Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())


@dataclass
class RunConfig:
    experiment_name: str = "mnist_jax"
    resume_last_run: bool = True
    steps_first_run: int = 3
    max_global_steps: int = 6
    dim: int = 3


def get_log_dir(cfg):
    """Experiment directory; created (and only known) where the logger lives."""
    if RANK != 0:
        return None
    root = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_resume_log_dir", os.environ.get("JOB_ID", "job"))
    path = os.path.join(root, cfg.experiment_name)
    os.makedirs(path, exist_ok=True)
    return path


@jax.jit
def train_step(w, x, y):
    g = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)  # all-reduce over the global batch
    return w - 0.1 * g


def make_batch(cfg, step):
    rng = np.random.default_rng(17 * step + RANK)
    x = rng.normal(size=(2, cfg.dim)).astype(np.float32)
    y = (x @ np.array([2.0, -1.0, 0.5], np.float32)).astype(np.float32)
    return (jax.make_array_from_process_local_data(BATCH, x), jax.make_array_from_process_local_data(BATCH, y))


def save_checkpoint(log_dir, step, w):
    if RANK == 0:
        np.savez(os.path.join(log_dir, "checkpoint.npz"), step=step, w=np.asarray(w))
    multihost_utils.sync_global_devices(f"ckpt_{step}")


def maybe_restore_checkpoint(cfg, log_dir, w):
    if cfg.resume_last_run and log_dir is not None:
        ckpt = np.load(os.path.join(log_dir, "checkpoint.npz"))
        return int(ckpt["step"]), jax.device_put(jnp.asarray(ckpt["w"]), REPL)
    return 0, w


def run(cfg, last_step, resume):
    log_dir = get_log_dir(cfg)
    w = jax.device_put(jnp.zeros((cfg.dim,), jnp.float32), REPL)
    start = 0
    if resume:
        start, w = maybe_restore_checkpoint(cfg, log_dir, w)
    for step in range(start, last_step):
        x, y = make_batch(cfg, step)
        w = train_step(w, x, y)
    save_checkpoint(log_dir, last_step, w)
    return w


def main():
    cfg = RunConfig()
    run(cfg, cfg.steps_first_run, resume=False)            # first run, interrupted after 3 steps
    w = run(cfg, cfg.max_global_steps, resume=True)        # relaunch with --resume_last_run
    print("RESULT w", np.round(np.asarray(w), 4).tolist())


if __name__ == "__main__":
    main()
