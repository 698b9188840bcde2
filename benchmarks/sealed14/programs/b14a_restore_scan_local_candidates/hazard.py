# Resume from host-local checkpoints: each process scans its own checkpoint root and keeps the candidates it could read
# Source: https://github.com/marin-community/marin/pull/8480
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
TOTAL_STEPS, MAX_CANDIDATES = 30, 8
ROOT = Path(tempfile.gettempdir()) / "mcjax_sealed14_restore_scan" / os.environ.get("JOB_ID", "local")


def host_root():
    return ROOT / f"host{jax.process_index()}"


def seed_previous_run():
    """What the interrupted previous run left on each host's local disk."""
    for step in (10, 20):
        d = host_root() / f"step-{step}"
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "w.npy", np.full(3, step / 100.0, np.float32))
        # host 1 was killed while writing step 20: its state is there but the metadata never was
        if not (step == 20 and jax.process_index() == 1):
            (d / "metadata.json").write_text(json.dumps({"step": step}))


def scan_checkpoint_root(root):
    candidates = []
    for d in sorted(root.glob("step-*")):
        try:
            candidates.append(json.loads((d / "metadata.json").read_text())["step"])
        except (OSError, ValueError):
            continue                                  # unreadable candidate: dropped on this process only
    return sorted(candidates)


def restore_state():
    candidates = scan_checkpoint_root(host_root())
    if not candidates:
        return 0, np.zeros(3, np.float32)             # fresh start (no barrier on this path)
    step = candidates[-1]
    w = np.load(host_root() / f"step-{step}" / "w.npy")
    multihost_utils.sync_global_devices("restore complete")
    return step, w


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w_: jnp.mean((jnp.sum(x * w_, axis=1) - 1.0) ** 2))(w)
    return w - 0.05 * g, loss


def main():
    seed_previous_run()
    multihost_utils.sync_global_devices("previous run on disk")
    start, w_host = restore_state()
    w = jax.device_put(w_host, REPL)
    rng = np.random.default_rng(jax.process_index())
    losses = []
    for step in range(start, TOTAL_STEPS):
        x = jax.make_array_from_process_local_data(ROWS, rng.normal(size=(4, 3)).astype(np.float32))
        w, loss = train_step(w, x)
        losses.append(float(loss))
    print("RESULT resumed_from", start)
    print("RESULT final_w", np.round(np.asarray(w), 5).tolist())


if __name__ == "__main__":
    main()
