# Rank-0-only export step calls get_latest_checkpoint_path, which broadcasts the path from process 0
# Source: https://github.com/meta-pytorch/tnt/pull/936
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import json
import os
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed13_latest_ckpt_path_rank0_export", os.environ.get("JOB_ID", "0"))
CKPT_DIR, EXPORT_DIR = os.path.join(ROOT, "ckpts"), os.path.join(ROOT, "export")
EPOCHS, STEPS_PER_EPOCH, LR = 3, 4, 0.1
MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
_STEP_RE = re.compile(r"epoch_(\d+)_step_(\d+)$")


def _get_latest_checkpoint_path(dirpath):
    """Process-local lookup: newest checkpoint directory under dirpath, or None."""
    if not os.path.isdir(dirpath):
        return None
    found = [(int(m.group(2)), name) for name in os.listdir(dirpath) if (m := _STEP_RE.search(name))]
    return os.path.join(dirpath, max(found)[1]) if found else None


def get_latest_checkpoint_path(dirpath):
    """Distributed lookup: process 0 lists the directory, the step is broadcast to every process."""
    path = _get_latest_checkpoint_path(dirpath) if jax.process_index() == 0 else None
    step = np.array([-1 if path is None else int(_STEP_RE.search(path).group(2))], np.int32)
    step = int(multihost_utils.broadcast_one_to_all(step)[0])
    if step < 0:
        return None
    return [os.path.join(dirpath, n) for n in sorted(os.listdir(dirpath)) if n.endswith(f"_step_{step}")][0]


@jax.jit
def train_step(w, x, y):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - LR * grad


@jax.jit
def eval_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


def local_batch(epoch, step):
    rng = np.random.default_rng(1000 * jax.process_index() + 10 * epoch + step)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def to_global(x):
    return jax.make_array_from_process_local_data(DATA, x)


def save_checkpoint(w, epoch, step):
    host_w = np.asarray(jax.jit(lambda a: a, out_shardings=REPL)(w))
    path = os.path.join(CKPT_DIR, f"epoch_{epoch}_step_{step}")
    if jax.process_index() == 0:
        os.makedirs(path, exist_ok=True)
        np.save(os.path.join(path, "w.npy"), host_w)
    multihost_utils.sync_global_devices(f"saved {path}")


def export_for_serving():
    """Runs on the main process only: copy the newest checkpoint to the serving directory."""
    latest = get_latest_checkpoint_path(CKPT_DIR)
    os.makedirs(EXPORT_DIR, exist_ok=True)
    with open(os.path.join(EXPORT_DIR, "manifest.json"), "w") as f:
        json.dump({"source": latest}, f)


def main():
    os.makedirs(CKPT_DIR, exist_ok=True)
    resume = get_latest_checkpoint_path(CKPT_DIR)  # every process: resume from the newest checkpoint
    init = np.load(os.path.join(resume, "w.npy")) if resume else np.zeros((3, 1), np.float32)
    w = jax.device_put(init, REPL)
    step = 0
    for epoch in range(EPOCHS):
        for _ in range(STEPS_PER_EPOCH):
            x, y = local_batch(epoch, step)
            w = train_step(w, to_global(x), to_global(y))
            step += 1
        save_checkpoint(w, epoch, step)
    if jax.process_index() == 0:
        export_for_serving()
    x, y = local_batch(99, 0)
    final = float(eval_loss(w, to_global(x), to_global(y)))
    multihost_utils.sync_global_devices("export done")
    print("RESULT steps", step)
    print("RESULT final_eval_loss", round(final, 5))
    print("RESULT weights", np.round(np.asarray(w.addressable_data(0)).ravel(), 4).tolist())


if __name__ == "__main__":
    main()
