# Checkpoint step discovery on the primary host then broadcast; an unfinalized tmp step dir trips an assert on the primary only
# Source: https://github.com/google/orbax/commit/5f5325f01bfc64f1e44f01a3df630524c3f6def8
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

STEP_PREFIX = "checkpoint"
COMMIT_FILE = "commit_success.txt"


def write_fake_run(root, rank):
    """A previous job left two finalized steps and one step whose save was interrupted."""
    if rank == 0:
        for step in (100, 200):
            d = root / f"{STEP_PREFIX}_{step}"
            d.mkdir(parents=True, exist_ok=True)
            np.save(d / "params.npy", np.full((8,), step / 100.0, np.float32))
            (d / COMMIT_FILE).write_text("ok")
        tmp = root / f"{STEP_PREFIX}_300.orbax-checkpoint-tmp-1700000000"
        tmp.mkdir(parents=True, exist_ok=True)
        np.save(tmp / "params.npy", np.zeros((8,), np.float32))
    multihost_utils.sync_global_devices("fake run written")


class StepNameFormat:
    def __init__(self, root):
        self.root = root

    def _glob_step_paths(self):
        return sorted(self.root.glob(f"{STEP_PREFIX}_*"))

    def _build_metadata(self, path):
        if not (path / COMMIT_FILE).exists():
            return None                                           # not finalized
        return int(path.name.split("_")[1])

    def _get_step_paths_and_total_steps(self, is_primary):
        step_paths, total = [], 0
        if is_primary:
            step_paths = self._glob_step_paths()
            total = len(step_paths)
        total = int(multihost_utils.broadcast_one_to_all(np.int32(total), is_source=is_primary))
        return step_paths, total

    def _get_broadcasted_step_list(self, step_paths, total_steps, is_primary):
        step_list = np.array([-1] * total_steps, np.int32)
        if is_primary:
            steps = sorted(s for s in map(self._build_metadata, step_paths) if s is not None)
            assert len(steps) == total_steps, f"len(steps)={len(steps)} != total_steps={total_steps}"
            step_list = np.array(steps, np.int32)
        return multihost_utils.broadcast_one_to_all(step_list, is_source=is_primary)

    def find_all(self):
        is_primary = jax.process_index() == 0
        step_paths, total_steps = self._get_step_paths_and_total_steps(is_primary)
        if total_steps <= 0:
            return []
        step_list = self._get_broadcasted_step_list(step_paths, total_steps, is_primary)
        return [int(s) for s in np.asarray(step_list) if s >= 0]


@jax.jit
def eval_params(params, x):
    return jnp.sum(jnp.tanh(x @ params))


def main():
    rank = jax.process_index()
    root = Path(tempfile.gettempdir()) / "mcjax_sealed15_step_list_tmp_dir_assert" / os.environ.get("JOB_ID", "0")
    write_fake_run(root, rank)
    steps = StepNameFormat(root).find_all()
    latest = max(steps)
    params = np.load(root / f"{STEP_PREFIX}_{latest}" / "params.npy")
    mesh = Mesh(np.array(jax.devices()), ("data",))
    local_x = np.random.default_rng(rank).normal(size=(4, 8)).astype(np.float32)
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_x)
    score = eval_params(jax.device_put(params, NamedSharding(mesh, P())), x)
    print("RESULT steps", steps)
    print("RESULT latest", latest, "score", round(float(score), 4))


if __name__ == "__main__":
    main()
