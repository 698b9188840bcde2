# A NeuronTrainer-style loop: data-parallel workers train a small model, then at the end of training the
# compiled-artifact cache is pushed to the Hub cache repository (the library helper uploads from the
# first worker and then holds a rendezvous so that no worker exits while the upload is running), and
# the final weights are gathered.
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def global_ordinal():
    return jax.process_index()


def rendezvous(tag):
    multihost_utils.sync_global_devices(tag)


def get_neuron_cache_path():
    path = os.path.join(tempfile.gettempdir(), "b21d_neuron_cache_" + os.environ.get("JOB_ID", "job"))
    os.makedirs(path, exist_ok=True)
    return path


def get_hf_hub_cache_repos():
    return ["aws-neuron/optimum-neuron-cache"]


def has_write_access_to_repo(repo_id):
    return True


def synchronize_hub_cache(cache_path, cache_repo_id):
    """Library helper: upload the local compilation cache from the first worker only."""
    if global_ordinal() == 0 and has_write_access_to_repo(cache_repo_id):
        entries = sorted(os.listdir(cache_path))
        manifest = {e: hashlib.md5(e.encode()).hexdigest() for e in entries}
        with open(os.path.join(cache_path, "uploaded.json"), "w") as f:
            json.dump({"repo": cache_repo_id, "entries": manifest}, f)
    rendezvous("synchronize_hub_cache")


@dataclass
class NeuronTrainingArguments:
    skip_cache_push: bool = False
    learning_rate: float = 0.2
    max_steps: int = 6


class NeuronTrainer:
    def __init__(self, args):
        self.args = args
        self.w = jnp.zeros(5)
        self._grad = jax.jit(jax.grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))

    def train(self):
        rng = np.random.default_rng(3 + global_ordinal())
        for step in range(self.args.max_steps):
            x = rng.normal(size=(8, 5)).astype(np.float32)
            y = x @ np.arange(5, dtype=np.float32)
            g = np.asarray(multihost_utils.process_allgather(np.asarray(self._grad(self.w, x, y)))).mean(0)
            self.w = self.w - self.args.learning_rate * g
            with open(os.path.join(get_neuron_cache_path(), f"graph_{global_ordinal()}_{step}.neff"), "w") as f:
                f.write("compiled")
        self.synchronize_hub_cache()

    def synchronize_hub_cache(self):
        cache_path = get_neuron_cache_path()
        repo_id = get_hf_hub_cache_repos()[0]
        if not self.args.skip_cache_push:
            synchronize_hub_cache(cache_path=cache_path, cache_repo_id=repo_id)


def main():
    trainer = NeuronTrainer(NeuronTrainingArguments())
    trainer.train()
    w = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.w)))
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
