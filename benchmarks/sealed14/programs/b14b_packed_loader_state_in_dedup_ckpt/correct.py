# SFT checkpoint saves each rank's packing-dataloader cursor in its own file, outside the deduplicated app state
# Source: https://github.com/PrimeIntellect-ai/prime-rl/pull/1035
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT = os.path.join(tempfile.gettempdir(), "mcjax_sealed14_packed_loader_state_in_dedup_ckpt", os.environ.get("JOB_ID", "0"))
MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
TOKENS_PER_PACK, SAVE_AT = 16, 3


class PackingDataset:
    """Packs this rank's variable-length samples into fixed 16-token micro-batches; `step` counts samples consumed."""

    def __init__(self, rank):
        lengths = [8] * 12 if rank == 0 else [16] * 6      # each rank's shard: 6 packs, different sample counts
        rng = np.random.default_rng(100 + rank)
        self.samples = [rng.normal(size=(n,)).astype(np.float32) for n in lengths]
        self.step = 0

    def state_dict(self):
        return {"step": np.int64(self.step)}

    def load_state_dict(self, state):
        self.step = int(state["step"])

    def __iter__(self):
        pack = []
        while self.step < len(self.samples):
            pack.append(self.samples[self.step])
            self.step += 1
            if sum(len(s) for s in pack) == TOKENS_PER_PACK:
                yield np.concatenate(pack).reshape(4, 4)
                pack = []


class CheckpointManager:
    """App state (replicated weights) goes through a deduplicating writer; each rank saves its own dataloader state."""

    def save(self, step, w, loader):
        app_state = {"step": np.int64(step), "w": np.asarray(w.addressable_data(0))}
        os.makedirs(CKPT, exist_ok=True)
        np.savez(os.path.join(CKPT, f"dataloader_rank{jax.process_index()}.npz"), **loader.state_dict())
        if jax.process_index() == 0:
            np.savez(os.path.join(CKPT, "app_state.npz"), **app_state)
        multihost_utils.sync_global_devices(f"checkpoint {step}")

    def load(self, loader):
        with np.load(os.path.join(CKPT, "app_state.npz")) as f:
            state = {k: f[k] for k in f.files}
        with np.load(os.path.join(CKPT, f"dataloader_rank{jax.process_index()}.npz")) as f:
            loader.load_state_dict({k: f[k] for k in f.files})
        return int(state["step"]), state["w"]


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - 0.5) ** 2))(w)
    return w - 0.1 * g, loss


def run(ckpt, resume):
    loader = PackingDataset(jax.process_index())
    step, w0 = ckpt.load(loader) if resume else (0, np.full((4,), 0.2, np.float32))
    w, loss = jax.device_put(w0, REPL), jnp.zeros(())
    for packed in loader:
        w, loss = train_step(w, jax.make_array_from_process_local_data(DATA, packed))
        step += 1
        if not resume and step == SAVE_AT:
            ckpt.save(step, w, loader)
            break
    return step, w, loss


def main():
    ckpt = CheckpointManager()
    run(ckpt, resume=False)                # preempted after the step-3 checkpoint
    step, w, loss = run(ckpt, resume=True)
    multihost_utils.sync_global_devices("run finished")
    print("RESULT final_step", step)
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
