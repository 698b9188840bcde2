# SaeTrainer.save() writes on process 0 only, and every process reaches the barrier at its end
# Source: https://github.com/EleutherAI/sparsify/pull/5
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
RUN_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_sae_save", os.environ.get("JOB_ID", "local"))

D_IN, D_SAE, BATCH = 8, 16, 4


class SaeConfig:
    hookpoints = ("layers.0", "layers.1")
    save_every = 3
    num_steps = 7
    lr = 1e-2


class SaeTrainer:
    def __init__(self, cfg, mesh):
        self.cfg, self.mesh = cfg, mesh
        self.global_rank = jax.process_index()
        self.rows = NamedSharding(mesh, P("data"))
        rep = NamedSharding(mesh, P())
        init = np.random.default_rng(0)  # identical on every process
        self.saes = {h: {"enc": jax.device_put(init.normal(0, 0.1, (D_IN, D_SAE)).astype(np.float32), rep),
                         "dec": jax.device_put(init.normal(0, 0.1, (D_SAE, D_IN)).astype(np.float32), rep)}
                     for h in cfg.hookpoints}
        self._update = jax.jit(self._sae_step)

    @staticmethod
    def _sae_step(params, acts, lr):
        def fvu(p):
            latents = jax.nn.relu(acts @ p["enc"])
            recon = latents @ p["dec"]
            return jnp.sum((recon - acts) ** 2) / jnp.sum((acts - acts.mean(0)) ** 2)
        loss, grads = jax.value_and_grad(fvu)(params)
        return jax.tree.map(lambda a, g: a - lr * g, params, grads), loss

    def _activations(self, step, hook):
        rng = np.random.default_rng([step, self.global_rank, len(hook)])
        return rng.normal(size=(BATCH, D_IN)).astype(np.float32)

    def save(self, step):
        """Save the SAEs to disk (one writer), then let everyone continue."""
        if self.global_rank == 0:
            path = os.path.join(RUN_DIR, f"step_{step}")
            os.makedirs(path, exist_ok=True)
            for hook, p in self.saes.items():
                np.savez(os.path.join(path, f"{hook}.npz"), **{k: np.asarray(v.addressable_data(0)) for k, v in p.items()})
        multihost_utils.sync_global_devices(f"sae_saved_{step}")

    def fit(self):
        losses = {}
        for step in range(1, self.cfg.num_steps + 1):
            for hook in self.cfg.hookpoints:
                acts = jax.make_array_from_process_local_data(self.rows, self._activations(step, hook))
                self.saes[hook], losses[hook] = self._update(self.saes[hook], acts, self.cfg.lr)
            if step % self.cfg.save_every == 0:
                self.save(step)
        return {h: float(v) for h, v in losses.items()}


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    losses = SaeTrainer(SaeConfig(), mesh).fit()
    for hook in SaeConfig.hookpoints:
        print("RESULT fvu", hook, round(losses[hook], 5))


main()
