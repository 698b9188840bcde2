# Checkpoint directory comes from the logger's lazily computed version (next free version_N), resolved on each process
# Source: https://github.com/Lightning-AI/pytorch-lightning/pull/6978
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
SHARDED = NamedSharding(MESH, P("fsdp"))
SAVE_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_logver", os.environ.get("JOB_ID", "local"))


class CSVLogger:
    def __init__(self, save_dir: str, name: str = "lightning_logs"):
        self.root = os.path.join(save_dir, name)
        self._version = None

    @property
    def version(self) -> int:
        if self._version is None:
            self._version = self._get_next_version()
        return self._version

    def _get_next_version(self) -> int:
        if not os.path.isdir(self.root):
            return 0
        existing = [int(d.split("_")[1]) for d in os.listdir(self.root) if d.startswith("version_")]
        return max(existing) + 1 if existing else 0

    @property
    def log_dir(self) -> str:
        return os.path.join(self.root, f"version_{self.version}")

    def log_hyperparams(self, params: dict) -> None:
        if jax.process_index() == 0:  # rank_zero_only
            os.makedirs(self.log_dir, exist_ok=True)
            with open(os.path.join(self.log_dir, "hparams.yaml"), "w") as f:
                f.writelines(f"{k}: {v}\n" for k, v in params.items())


class ModelCheckpoint:
    def __init__(self):
        self.dirpath = None

    def setup(self, logger: CSVLogger) -> None:
        self.dirpath = os.path.join(logger.log_dir, "checkpoints")

    def save(self, step: int, state: dict) -> None:
        path = os.path.join(self.dirpath, f"step={step}")
        os.makedirs(path, exist_ok=True)
        for name, arr in state.items():
            for shard in arr.addressable_shards:
                np.save(os.path.join(path, f"{name}.{shard.index[0].start or 0}.npy"), np.asarray(shard.data))
        multihost_utils.sync_global_devices("checkpoint_saved")

    def consolidate(self, step: int, state: dict) -> float:
        # primary merges the shards of every process into one exported file
        total = 0.0
        if jax.process_index() == 0:
            path = os.path.join(self.dirpath, f"step={step}")
            for name, arr in state.items():
                rows = arr.shape[0] // jax.device_count()
                parts = [np.load(os.path.join(path, f"{name}.{i * rows}.npy")) for i in range(jax.device_count())]
                total += float(np.concatenate(parts).sum())
        return float(multihost_utils.broadcast_one_to_all(np.float32(total)))


@jax.jit
def train_step(state):
    return {k: v * 0.5 + 1.0 for k, v in state.items()}


def main() -> None:
    if jax.process_index() == 0:
        shutil.rmtree(SAVE_DIR, ignore_errors=True)
    multihost_utils.sync_global_devices("fresh_save_dir")
    logger = CSVLogger(SAVE_DIR)
    logger.log_hyperparams({"lr": 0.5, "layers": 3})
    init = multihost_utils.broadcast_one_to_all(  # identical initial weights on every host
        {f"layer{i}": np.full((8, 4), float(i), np.float32) for i in range(3)})
    state = {k: jax.make_array_from_process_local_data(SHARDED, np.asarray(v)[jax.process_index() * 4:][:4])
             for k, v in init.items()}
    callback = ModelCheckpoint()
    callback.setup(logger)
    for step in range(1, 4):
        state = train_step(state)
    callback.save(step, state)
    print("RESULT ckpt_dir", os.path.relpath(callback.dirpath, SAVE_DIR))
    print("RESULT exported_sum", round(callback.consolidate(step, state), 3))


main()
