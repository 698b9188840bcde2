# Re-saving a step whose earlier save was interrupted: the "directory already exists" guard raises on rank 0 only
# Source: https://github.com/NVIDIA-NeMo/Automodel/issues/3254 (port of AutoModel's BaseRecipe.save_checkpoint to JAX; fixed by PR #3261)
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os
import pickle
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_rank_0():
    return jax.process_index() == 0


class Checkpointer:
    def __init__(self, mesh):
        self._consolidate = jax.jit(lambda p: p, out_shardings=NamedSharding(mesh, P()))

    def save_model(self, params, path):
        full = {k: np.asarray(self._consolidate(v)) for k, v in params.items()}   # all-gather of the shards
        if is_rank_0():
            os.makedirs(os.path.join(path, "model"), exist_ok=True)
            with open(os.path.join(path, "model", "consolidated.pkl"), "wb") as f:
                pickle.dump(full, f)

    def save_optimizer(self, opt_state, path):
        os.makedirs(os.path.join(path, "optim"), exist_ok=True)
        with open(os.path.join(path, "optim", f"shard_{jax.process_index()}.pkl"), "wb") as f:
            pickle.dump(opt_state, f)
        multihost_utils.sync_global_devices("optim_saved")


class TrainFinetuneRecipe:
    def __init__(self, ckpt_root, mesh):
        self.ckpt_root, self.mesh = ckpt_root, mesh
        self.checkpointer = Checkpointer(mesh)
        w = np.random.default_rng(0).normal(size=(4, 4)).astype(np.float32)
        self.params = {"w": jax.device_put(w, NamedSharding(mesh, P("dp")))}
        self.opt_state = {"step": 0}
        self._grad = jax.jit(jax.grad(lambda p, x: jnp.mean((x @ p["w"]) ** 2)), out_shardings=NamedSharding(mesh, P("dp")))

    def _find_latest_checkpoint(self):
        latest = os.path.join(self.ckpt_root, "LATEST")
        return int(open(latest).read().split("_step_")[1]) if os.path.exists(latest) else 0

    def save_checkpoint(self, epoch, step):
        path = os.path.join(self.ckpt_root, f"epoch_{epoch}_step_{step}")
        marker = os.path.join(path, ".in_progress")
        if is_rank_0():
            if os.path.exists(path):
                if not os.path.exists(marker):
                    raise FileExistsError(f"Checkpoint directory {path} already exists")
                print(f"warning: replacing unpublished checkpoint {path}")   # left by an interrupted save
                shutil.rmtree(path)
            os.makedirs(path)
            open(marker, "w").close()
        multihost_utils.sync_global_devices("checkpoint_dir_ready")
        self.checkpointer.save_model(self.params, path)
        self.checkpointer.save_optimizer(self.opt_state, path)
        if is_rank_0():
            with open(os.path.join(self.ckpt_root, "LATEST"), "w") as f:
                f.write(os.path.basename(path))
            os.remove(marker)   # published: clear the in-progress mark

    def run_train_validation_loop(self, max_steps=6, ckpt_every=2):
        start = self._find_latest_checkpoint()
        for step in range(start + 1, max_steps + 1):
            x = np.random.default_rng(step * 7 + jax.process_index()).normal(size=(2, 4)).astype(np.float32)
            g = self._grad(self.params, jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), x))
            self.params = {"w": self.params["w"] - 0.05 * g["w"]}
            self.opt_state = {"step": step}
            if step % ckpt_every == 0:
                self.save_checkpoint(0, step)
        return start


def previous_job_leftovers(root):
    """The previous job completed the step-2 save and was killed by the wall-clock limit inside the step-4 save."""
    os.makedirs(os.path.join(root, "epoch_0_step_2", "optim"))
    os.makedirs(os.path.join(root, "epoch_0_step_4", "model"))
    open(os.path.join(root, "epoch_0_step_4", ".in_progress"), "w").close()
    with open(os.path.join(root, "LATEST"), "w") as f:
        f.write("epoch_0_step_2")


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
    root = os.path.join(tempfile.gettempdir(), f"automodel_ckpt_{os.environ.get('JOB_ID', 'local')}")
    if is_rank_0():
        shutil.rmtree(root, ignore_errors=True)
        previous_job_leftovers(root)
    multihost_utils.sync_global_devices("setup")
    recipe = TrainFinetuneRecipe(root, mesh)
    resumed_from = recipe.run_train_validation_loop()
    w = np.asarray(recipe.checkpointer._consolidate(recipe.params["w"]))
    print("RESULT resumed_from", resumed_from)
    print("RESULT w_sum", round(float(w.sum()), 4))


if __name__ == "__main__":
    main()
