# Patch-based volume prediction: whole cases are assigned to ranks, every case is cut into
# patches that are predicted batch by batch, and rank 0 writes a TensorBoard-style progress log
# with the running prediction measures after each batch.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PATCH = 4


def synchronize_data(data):
    return np.asarray(multihost_utils.process_allgather(np.asarray(data, np.float32)))


class Measure:
    def __init__(self):
        self.values = []

    def update(self, pred, ref):
        self.values.append(float(np.abs(pred - ref).mean()))

    def format_loss(self):
        return np.array([np.mean(self.values), np.std(self.values)], np.float32)


class CaseDataset:
    def __init__(self, num_cases=3, seed=3):
        rng = np.random.default_rng(seed)
        depths = [12, 4, 8]                      # slices per case
        self.cases = [rng.normal(size=(depths[i], PATCH)).astype(np.float32) for i in range(num_cases)]

    def get_data(self, world_size):
        return [[c for i, c in enumerate(self.cases) if i % world_size == r] for r in range(world_size)]


@jax.jit
def model(params, x):
    return jnp.tanh(x @ params) * 0.5


class Predictor:
    def __init__(self, global_rank, world_size, batch_size=2):
        self.global_rank = global_rank
        self.world_size = world_size
        self.batch_size = batch_size
        self.params = jnp.eye(PATCH) * 0.9
        self.measure = Measure()
        self.log_lines = []

    def get_measure(self, world_size, global_rank):
        outputs = synchronize_data(self.measure.format_loss()) if world_size > 1 else self.measure.format_loss()[None]
        if global_rank == 0:
            return outputs.mean(0)
        return None

    def _predict_log(self, it):
        measures = self.get_measure(self.world_size, self.global_rank)
        if self.global_rank != 0:
            return
        self.log_lines.append(f"it {it}: mae {measures[0]:.4f} +- {measures[1]:.4f}")

    def run(self, cases):
        it = 0
        outputs = []
        for case in cases:
            patches = case.reshape(-1, self.batch_size, PATCH)
            preds = []
            for batch in patches:
                pred = np.asarray(model(self.params, batch))
                self.measure.update(pred, np.tanh(batch) * 0.5)
                preds.append(pred)
                it += 1
                self._predict_log(it)
            outputs.append(np.concatenate(preds))
        return outputs


def main():
    rank, world = jax.process_index(), jax.process_count()
    dataset = CaseDataset()
    predictor = Predictor(rank, world)
    outputs = predictor.run(dataset.get_data(world)[rank])
    summary = synchronize_data([len(outputs), sum(o.shape[0] for o in outputs), float(np.mean(predictor.measure.values))])
    if rank == 0:
        print("\n".join(predictor.log_lines))
    print("RESULT cases_predicted", int(summary[:, 0].sum()))
    print("RESULT slices_predicted", int(summary[:, 1].sum()))
    print("RESULT mean_mae", round(float(summary[:, 2].mean()), 4))


if __name__ == "__main__":
    main()
