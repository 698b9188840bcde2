# Eval job: every host enters the step broadcast with -1 for 'no checkpoint', so host 0's step reaches all
# Source: https://github.com/google/paxml/commit/cc8eb8d187d88b5826d561181dbe09f885ad5282
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import re
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_RE = re.compile(r"^checkpoint_(\d+)$")
HIDDEN = 8


def host_view(base, rank):
    """The checkpoint directory as each eval host sees it: host 1 looked before the trainer created it."""
    root = base / f"host_{rank}" / "train_dir" / "checkpoints"
    if rank == 0:
        for step in (100, 200):
            d = root / f"checkpoint_{step:08d}"
            d.mkdir(parents=True, exist_ok=True)
            np.save(d / "w.npy", np.cos(np.arange(HIDDEN, dtype=np.float32)) * (step / 100.0))
    return root


def latest_checkpoint(checkpoint_dir):
    steps = sorted(int(m.group(1)) for p in checkpoint_dir.iterdir() if (m := CKPT_RE.match(p.name)))
    return checkpoint_dir / f"checkpoint_{steps[-1]:08d}" if steps else None


def retrieve_latest_checkpoint_step(checkpoint_dir):
    if not checkpoint_dir.exists():
        checkpoint_step = -1
    else:
        latest = latest_checkpoint(checkpoint_dir)
        checkpoint_step = -1 if latest is None else int(CKPT_RE.match(latest.name).group(1))
    np_step = multihost_utils.broadcast_one_to_all(np.array(checkpoint_step, dtype=np.int32))
    multihost_utils.assert_equal(np_step, "checkpoint_steps across hosts don't match.")
    step = int(np_step.item())
    return None if step == -1 else step


def restore_weights(checkpoint_dir, step):
    if step is None:
        return np.zeros((HIDDEN,), np.float32)
    if jax.process_index() == 0:
        w = np.load(checkpoint_dir / f"checkpoint_{step:08d}" / "w.npy")
    else:
        w = np.zeros((HIDDEN,), np.float32)
    return np.asarray(multihost_utils.broadcast_one_to_all(w))


@jax.jit
def eval_step(w, x, y):
    pred = jnp.tanh(x @ w)
    return jnp.mean((pred - y) ** 2), jnp.mean(jnp.sign(pred) == jnp.sign(y))


def main():
    rank = jax.process_index()
    base = Path(tempfile.gettempdir()) / "mcjax_sealed16_latest_step_none_skips_bcast" / os.environ.get("JOB_ID", "0")
    ckpt_dir = host_view(base, rank)
    step = retrieve_latest_checkpoint_step(ckpt_dir)
    w = restore_weights(ckpt_dir, step)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rng = np.random.default_rng(11 + rank)
    x_local = rng.normal(size=(4, HIDDEN)).astype(np.float32)
    y_local = np.tanh(x_local.sum(axis=1) * 0.3).astype(np.float32)
    batch_sharding = NamedSharding(mesh, P("data"))
    x = jax.make_array_from_process_local_data(batch_sharding, x_local)
    y = jax.make_array_from_process_local_data(batch_sharding, y_local)
    w = jax.device_put(w, NamedSharding(mesh, P()))
    loss, acc = eval_step(w, x, y)
    print("RESULT restored_step", step)
    print("RESULT eval_loss", round(float(loss), 5))
    print("RESULT eval_accuracy", round(float(acc), 5))


if __name__ == "__main__":
    main()
