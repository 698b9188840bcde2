# Each process stamps the predictions folder with its own clock, so merging by listing the folder sees only its own file
# Source: https://github.com/facebookresearch/fairchem/pull/137
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import datetime
import glob
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
RUN_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_timestamp_results", os.environ.get("JOB_ID", "local"))
N_ATOMS, N_FEAT = 6, 5


class BaseTrainer:
    def __init__(self, run_dir):
        self.timestamp = datetime.datetime.now().strftime("%Y-%m-%d-%H-%M-%S-%f")
        self.results_dir = os.path.join(run_dir, "results", self.timestamp)
        os.makedirs(self.results_dir, exist_ok=True)
        mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))
        self.sharding = NamedSharding(mesh, P("batch"))
        rng = np.random.default_rng(0)
        self.w = jnp.asarray(rng.normal(0, 0.2, (N_FEAT,)), jnp.float32)

    def predict_batch(self, feats):
        energy = jax.jit(lambda w, x: jnp.sum(jnp.tanh(x @ w), axis=-1), out_shardings=self.sharding)
        return energy(self.w, jax.make_array_from_process_local_data(self.sharding, feats))

    def predict(self, loader):
        ids, energies = [], []
        for sid, feats in loader:
            out = self.predict_batch(feats)
            ids.append(sid)
            energies.append(np.asarray(out.addressable_data(0)))
        self.save_results(np.concatenate(ids), np.concatenate(energies))

    def save_results(self, ids, energies):
        rank = jax.process_index()
        np.savez(os.path.join(self.results_dir, f"s2ef_predictions_{rank}.npz"), ids=ids, energy=energies)
        multihost_utils.sync_global_devices("predictions_saved")
        merged_ids, merged_e = [], []
        for path in sorted(glob.glob(os.path.join(self.results_dir, "s2ef_predictions_*.npz"))):
            with np.load(path) as f:
                merged_ids.append(f["ids"])
                merged_e.append(f["energy"])
        self.merged = dict(zip(np.concatenate(merged_ids).tolist(), np.concatenate(merged_e).tolist()))


def test_loader(rank, n_batches=3, batch=4):
    rng = np.random.default_rng(50 + rank)  # the sampler's shard of the test set
    for b in range(n_batches):
        sid = np.arange(batch, dtype=np.int64) + 1000 * rank + batch * b
        yield sid, rng.normal(0, 1, (batch, N_ATOMS, N_FEAT)).astype(np.float32)


def main():
    trainer = BaseTrainer(RUN_DIR)
    trainer.predict(test_loader(jax.process_index()))
    energies = np.array([trainer.merged[k] for k in sorted(trainer.merged)])
    print("RESULT n_predictions", len(energies))
    print("RESULT mean_energy", round(float(energies.mean()), 5))


main()
