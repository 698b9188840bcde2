# The resume-from-checkpoint block is dedented out of the rank-0 config-logging block, so every process restores
# Source: https://github.com/allenai/molmo/pull/33
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import json
import os
import tempfile
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_resume_nested_under_rank0_log",
                        os.environ.get("JOB_ID", "local"))


@dataclass
class TrainConfig:
    allow_resume: bool = True
    steps_before_restart: int = 3
    total_steps: int = 6
    lr: float = 0.1


def get_global_rank():
    return jax.process_index()


class Trainer:
    def __init__(self, cfg, mesh):
        self.cfg = cfg
        self.mesh = mesh
        self.replicated = NamedSharding(mesh, P())
        self.batch_sharding = NamedSharding(mesh, P("data"))
        self.params = jax.device_put(np.ones((4,), np.float32), self.replicated)
        self.step = 0
        self._train = jax.jit(lambda p, x: p - cfg.lr * jnp.mean(x, axis=0) * p)

    def batch(self, step):
        return np.full((2, 4), 0.1 * (step + 1) + 0.05 * get_global_rank(), np.float32)

    def train_until(self, last_step):
        while self.step < last_step:
            x = jax.make_array_from_process_local_data(self.batch_sharding, self.batch(self.step))
            self.params = self._train(self.params, x)
            self.step += 1

    def save_checkpoint(self):
        host_params = multihost_utils.process_allgather(self.params, tiled=True)
        if get_global_rank() == 0:
            os.makedirs(CKPT_DIR, exist_ok=True)
            np.save(os.path.join(CKPT_DIR, "params.npy"), np.asarray(host_params))
            with open(os.path.join(CKPT_DIR, "state.json"), "w") as f:
                json.dump({"step": self.step}, f)
        multihost_utils.sync_global_devices("checkpoint saved")

    def restore_checkpoint(self):
        with open(os.path.join(CKPT_DIR, "state.json")) as f:
            step = json.load(f)["step"]
        params = np.load(os.path.join(CKPT_DIR, "params.npy"))
        step = int(multihost_utils.broadcast_one_to_all(np.array(step, np.int32)))
        self.params = jax.device_put(params, self.replicated)
        self.step = step
        multihost_utils.sync_global_devices("checkpoint restored")


def main():
    cfg = TrainConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    first = Trainer(cfg, mesh)
    first.train_until(cfg.steps_before_restart)
    first.save_checkpoint()

    # --- restart: a fresh trainer resumes from the saved checkpoint ---
    trainer = Trainer(cfg, mesh)
    if get_global_rank() == 0:
        print("Configuration:")
        print(json.dumps(asdict(cfg)))

    if cfg.allow_resume:
        trainer.restore_checkpoint()
        print(f"resumed at step {trainer.step}")

    trainer.train_until(cfg.total_steps)
    print("RESULT final_step", trainer.step)
    print("RESULT params", [round(float(v), 5) for v in np.asarray(trainer.params.addressable_data(0))])


main()
