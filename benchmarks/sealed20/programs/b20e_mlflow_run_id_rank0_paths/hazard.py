# Weather-model style training (anemoi-training layout): an MLflow logger owns the run id, output paths
# are <root>/<run_id>/, the model is sharded over workers and each worker writes its shard; after the
# run, rank 0 consolidates the shards into an inference checkpoint.
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Paths:
    root: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / f"anemoi-{os.environ.get('JOB_ID', 'run')}")
    checkpoints: Path = None
    plots: Path = None


class MLflowLogger:
    def __init__(self, rank):
        self._rank = rank
        self._run_id = None

    @property
    def experiment(self):
        if self._rank != 0:
            return None
        if self._run_id is None:
            self._run_id = uuid.uuid4().hex
        return self._run_id

    @property
    def run_id(self):
        return self.experiment


class AnemoiTrainer:
    def __init__(self, rank, world_size, steps=12, lr=0.05):
        self.rank, self.world_size, self.steps, self.lr = rank, world_size, steps, lr
        self.paths = Paths()
        self.mlflow_logger = MLflowLogger(rank)

    @cached_property
    def run_id(self):
        run_id = self.mlflow_logger.run_id
        if run_id is None:
            run_id = uuid.uuid4().hex
        return run_id

    def update_paths(self):
        self.paths.checkpoints = self.paths.root / "checkpoint" / self.run_id
        self.paths.plots = self.paths.root / "plots" / self.run_id
        self.paths.checkpoints.mkdir(parents=True, exist_ok=True)

    def _data(self):
        rng = np.random.default_rng(11 + self.rank)
        x = rng.normal(size=(self.steps, 16, 8)).astype(np.float32)
        return x, np.roll(x, 1, axis=-1) * 0.5

    def fit(self):
        shard = np.full((8, 8 // self.world_size), 0.01 * (self.rank + 1), np.float32)
        x, y = self._data()
        grad_fn = jax.jit(jax.grad(lambda w, a, b: jnp.mean((a @ w - b) ** 2)))
        for step in range(self.steps):
            full = np.concatenate(list(np.asarray(multihost_utils.process_allgather(shard))), axis=1)
            g = np.asarray(multihost_utils.process_allgather(np.asarray(grad_fn(full, x[step], y[step])))).mean(0)
            cols = slice(self.rank * shard.shape[1], (self.rank + 1) * shard.shape[1])
            shard = shard - self.lr * g[:, cols]
        np.save(self.paths.checkpoints / f"last-shard{self.rank}.npy", shard)
        multihost_utils.sync_global_devices("checkpoint_written")
        return shard

    def save_inference_checkpoint(self):
        shards = [np.load(self.paths.checkpoints / f"last-shard{r}.npy") for r in range(self.world_size)]
        model = np.concatenate(shards, axis=1)
        np.save(self.paths.checkpoints / "inference-last.npy", model)
        return model


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    trainer = AnemoiTrainer(rank, world_size)
    trainer.update_paths()
    trainer.fit()
    checksum = 0.0
    if rank == 0:
        checksum = float(np.abs(trainer.save_inference_checkpoint()).sum())
    checksum = float(np.asarray(multihost_utils.broadcast_one_to_all(np.float32(checksum))))
    print("RESULT run_dir", trainer.paths.checkpoints.relative_to(trainer.paths.root).parent)
    print("RESULT inference_checksum", round(checksum, 4))
    multihost_utils.sync_global_devices("done")
    if rank == 0:
        shutil.rmtree(trainer.paths.root, ignore_errors=True)


if __name__ == "__main__":
    main()
