# push_to_hub returns early on non-main hosts, but the save it calls first has a cross-host rendezvous
# Source: https://github.com/huggingface/transformers/pull/12895
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_hub_push_rendezvous_main_only",
                       os.environ.get("JOB_ID", "local"))
CONFIG = {"hub_model_id": "org/tiny-regressor", "steps": 4, "lr": 0.05}


class Trainer:
    def __init__(self, config):
        self.config = config
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.sharding = NamedSharding(self.mesh, P("data"))
        self.replicated = NamedSharding(self.mesh, P())
        self.params = jax.device_put(jnp.linspace(0.5, 1.5, 4, dtype=jnp.float32), self.replicated)
        self._step = jax.jit(self._train_step, out_shardings=self.replicated)
        self.uploaded = []

    @staticmethod
    def _train_step(params, batch):
        grad = jnp.mean(batch) * params
        return params - 0.05 * grad

    def is_world_process_zero(self):
        return jax.process_index() == 0

    def train(self):
        for step in range(self.config["steps"]):
            local = np.full((2,), 0.1 * (step + 1), np.float32)
            batch = jax.make_array_from_process_local_data(self.sharding, local)
            self.params = self._step(self.params, batch)

    def save_model(self, output_dir):
        # Like xm.rendezvous("saving_checkpoint") on TPU: every host must reach it.
        host_params = multihost_utils.process_allgather(self.params, tiled=True)
        multihost_utils.sync_global_devices("saving_checkpoint")
        if self.is_world_process_zero():
            os.makedirs(output_dir, exist_ok=True)
            with open(os.path.join(output_dir, "model.json"), "w") as f:
                json.dump({"params": np.asarray(host_params).round(6).tolist()}, f)
        return float(np.sum(host_params))

    def push_to_hub(self, commit_message="End of training"):
        if not self.is_world_process_zero():
            return None
        checksum = self.save_model(OUT_DIR)
        self.uploaded.append((self.config["hub_model_id"], commit_message))
        return checksum


def main():
    trainer = Trainer(CONFIG)
    trainer.train()
    trainer.push_to_hub()
    total = jax.jit(jnp.sum, out_shardings=trainer.replicated)(trainer.params)
    multihost_utils.sync_global_devices("end of run")
    print("RESULT params_sum", round(float(total), 5))


main()
