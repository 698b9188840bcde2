# GPT-style LM training (toy size) in JAX: periodic eval, keep the best checkpoint with a multi-process save
# Source: https://github.com/google/flax/issues/2834
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
import shutil
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 555
    out_dir: str = os.path.join(tempfile.gettempdir(), "gpt-jax-" + os.environ.get("JOB_ID", "local"))
    vocab: int = 16
    embed: int = 12
    block_size: int = 8
    batch_size: int = 8
    eval_interval: int = 4
    eval_steps: int = 1
    train_steps: int = 80
    learning_rate: float = 2.0


def save_checkpoint_multiprocess(ckpt_dir, target, step, keep=3):
    """All processes enter; process 0 writes; old checkpoints beyond `keep` are removed."""
    multihost_utils.sync_global_devices("starting_save_checkpoint")
    if jax.process_index() == 0:
        os.makedirs(ckpt_dir, exist_ok=True)
        np.savez(os.path.join(ckpt_dir, f"checkpoint_{step}.npz"), **{k: np.asarray(v) for k, v in target.items()})
        existing = sorted(f for f in os.listdir(ckpt_dir) if f.startswith("checkpoint_"))
        for old in sorted(existing, key=lambda f: int(f[11:-4]))[:-keep]:
            os.remove(os.path.join(ckpt_dir, old))
    multihost_utils.sync_global_devices("finished_save_checkpoint")


def init_params(key, cfg):
    k1, k2 = jax.random.split(key)
    return {"embed": 0.3 * jax.random.normal(k1, (cfg.vocab, cfg.embed)),
            "unembed": 0.3 * jax.random.normal(k2, (cfg.embed, cfg.vocab))}


def lm_loss(params, tokens):
    x, y = tokens[:, :-1], tokens[:, 1:]
    h = jnp.tanh(params["embed"][x])
    logits = h @ params["unembed"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[..., None], axis=-1))


grad_fn = jax.jit(jax.value_and_grad(lm_loss))
eval_fn = jax.jit(lm_loss)


def get_dataset(rank, cfg, split, n_batches):
    rng = np.random.default_rng({"train": 10, "val": 20}[split] + 7 * rank)
    start = rng.integers(0, cfg.vocab, size=(n_batches, cfg.batch_size, 1))
    stride = rng.integers(1, 3, size=(n_batches, cfg.batch_size, 1))
    noise = (rng.random((n_batches, cfg.batch_size, cfg.block_size + 1)) < 0.15) * rng.integers(0, cfg.vocab, (n_batches, cfg.batch_size, cfg.block_size + 1))
    return ((start + stride * np.arange(cfg.block_size + 1) + noise) % cfg.vocab).astype(np.int32)


def evaluate(params, val_batches, steps):
    return float(np.mean([eval_fn(params, val_batches[i]) for i in range(steps)]))


def main():
    cfg = TrainConfig()
    rank = jax.process_index()
    train_batches = get_dataset(rank, cfg, "train", cfg.train_steps)
    val_batches = get_dataset(rank, cfg, "val", cfg.eval_steps)
    params = init_params(jax.random.PRNGKey(cfg.seed), cfg)
    best_val_loss, saved_steps = float("inf"), []
    if rank == 0:
        shutil.rmtree(cfg.out_dir, ignore_errors=True)

    for step in range(cfg.train_steps):
        if step % cfg.eval_interval == 0:
            val_loss = evaluate(params, val_batches, cfg.eval_steps)
            if val_loss < best_val_loss:
                best_val_loss = val_loss
                save_checkpoint_multiprocess(os.path.join(cfg.out_dir, "checkpoints", "train_state"), params, step, keep=3)
                saved_steps.append(step)
        loss, grads = grad_fn(params, train_batches[step])
        grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0) for k, g in grads.items()}
        params = {k: params[k] - cfg.learning_rate * grads[k] for k in params}

    checksum = float(sum(jnp.sum(jnp.abs(v)) for v in params.values()))
    print("RESULT checkpoints_saved_at", saved_steps)
    print("RESULT params_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
