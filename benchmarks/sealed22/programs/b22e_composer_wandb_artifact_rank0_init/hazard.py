import os
import pathlib
import shutil
import tempfile
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
ARTIFACT_ROOT = os.path.join(tempfile.gettempdir(), "wandb_artifacts_" + os.environ.get("JOB_ID", "local"))


class wandb:  # minimal offline stand-in for the wandb client: runs and artifacts live under ARTIFACT_ROOT
    run = None

    @staticmethod
    def init(project, entity, name, **kwargs):
        wandb.run = types.SimpleNamespace(project=project, entity=entity, name=name)
        return wandb.run

    @staticmethod
    def use_artifact(artifact_name):
        return wandb.Api().artifact(f"{wandb.run.entity}/{wandb.run.project}/{artifact_name}")

    class Api:
        def artifact(self, path):
            return types.SimpleNamespace(download=lambda root: shutil.copytree(
                os.path.join(ARTIFACT_ROOT, path.replace(":", "_")), root, dirs_exist_ok=True) and root)


def encode(s, n=64):
    buf = np.zeros(n, np.uint8)
    raw = s.encode()[:n]
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    return buf


class WandBLogger:
    def __init__(self, project, entity, rank_zero_only=True):
        self._enabled = (not rank_zero_only) or jax.process_index() == 0
        self._init_kwargs = {"project": project, "entity": entity}

    def init(self, run_name):
        self._init_kwargs["name"] = run_name
        if self._enabled:
            wandb.init(**self._init_kwargs)

    def get_file_artifact(self, artifact_name, destination):
        artifact = wandb.use_artifact(artifact_name)
        with tempfile.TemporaryDirectory() as tmpdir:
            artifact_folder = os.path.join(tmpdir, "artifact_folder")
            artifact.download(root=artifact_folder)
            shutil.copy(os.path.join(artifact_folder, "checkpoint.npy"), destination)


def upload_previous_run_checkpoint(entity, project):
    if jax.process_index() == 0:
        folder = os.path.join(ARTIFACT_ROOT, entity, project, "ep0-ba6-rank0_latest")
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "checkpoint.npy"), np.linspace(-1, 1, 8).astype(np.float32))
    multihost_utils.sync_global_devices("artifact_uploaded")


def train(weights, steps=4, lr=0.1):
    rank = jax.process_index()
    rng = np.random.default_rng(rank)
    for _ in range(steps):
        x = rng.normal(size=(16, weights.shape[0])).astype(np.float32)
        grad = np.asarray(jax.grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(weights))
        grad = np.asarray(multihost_utils.process_allgather(grad)).mean(0)
        weights = weights - lr * grad
    return weights


def main():
    logger = WandBLogger(project="mpt-125m", entity="mosaic-ml", rank_zero_only=True)
    logger.init(run_name="mpt-125m-autoresume")
    upload_previous_run_checkpoint("mosaic-ml", "mpt-125m")
    local_ckpt = pathlib.Path(tempfile.mkdtemp()) / "latest-rank0.npy"
    logger.get_file_artifact("ep0-ba6-rank0:latest", str(local_ckpt))
    weights = np.load(local_ckpt)
    weights = train(weights)
    print("RESULT resumed_norm", round(float(np.linalg.norm(np.load(local_ckpt))), 5))
    print("RESULT weights", np.round(weights, 4).tolist())
    multihost_utils.sync_global_devices("finished")
    if jax.process_index() == 0:
        shutil.rmtree(ARTIFACT_ROOT, ignore_errors=True)


if __name__ == "__main__":
    main()
