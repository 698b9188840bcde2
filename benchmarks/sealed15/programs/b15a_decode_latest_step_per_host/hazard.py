# Continuous decode: every host looks up the latest checkpoint step itself, while the trainer keeps adding steps
# Source: https://github.com/google/paxml/commit/929ebe8b4ebcb42725207ac65a9b7ae6639a7dd2
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
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


def host_checkpoint_view(base, rank):
    """The checkpoint directory as this decode host sees it: the trainer finalized step 300 just before host 1 looked."""
    view = base / f"host_{rank}" / "checkpoints"
    visible = (100, 200) if rank == 0 else (100, 200, 300)
    for step in visible:
        d = view / f"checkpoint_{step}"
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / "w.npy", np.linspace(-1.0, 1.0, 6, dtype=np.float32) * (step / 100.0))
    return view


def latest_checkpoint_step(checkpoint_dir):
    steps = [int(m.group(1)) for p in checkpoint_dir.iterdir() if (m := CKPT_RE.match(p.name))]
    return max(steps) if steps else None


def retrieve_latest_checkpoint_step(checkpoint_dir):
    step = latest_checkpoint_step(checkpoint_dir)
    return step


@jax.jit
def decode_step(w, prompts):
    logits = jnp.tanh(prompts * w)
    return jnp.argmax(logits, axis=-1), jnp.mean(jnp.max(logits, axis=-1))


def main():
    rank = jax.process_index()
    base = Path(tempfile.gettempdir()) / "mcjax_sealed15_decode_latest_step_per_host" / os.environ.get("JOB_ID", "0")
    ckpt_dir = host_checkpoint_view(base, rank)
    step = retrieve_latest_checkpoint_step(ckpt_dir)
    w = np.load(ckpt_dir / f"checkpoint_{step}" / "w.npy")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    w = jax.device_put(w, NamedSharding(mesh, P()))
    prompts = np.random.default_rng(7 + rank).normal(size=(3, 6)).astype(np.float32)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), prompts)
    ids, score = decode_step(w, x)
    ids = np.asarray(multihost_utils.process_allgather(ids, tiled=True))
    print("RESULT restored_step", step)
    print("RESULT decoded_ids", ids.tolist())
    print("RESULT mean_score", round(float(score), 5))


if __name__ == "__main__":
    main()
