# KTO-style preference training on unpaired (desirable / undesirable) examples; per-batch reward sums and counts are gathered
# Source: https://github.com/huggingface/trl/issues/1342
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

BETA = 0.1
PER_DEVICE_BATCH = 4
FEATURES = 8
LABELS = [True, False, True, False, True, True, True, True, False, True, False, True, True, False, True, True]


def make_dataset():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((len(LABELS), FEATURES)).astype(np.float32)
    return x, np.array(LABELS)


class KTOTrainer:
    def __init__(self, mesh):
        self.mesh = mesh
        self.data = NamedSharding(mesh, P("dp"))
        self.policy = jax.device_put(jnp.full((FEATURES,), 0.05, jnp.float32), NamedSharding(mesh, P()))
        self.ref = np.full((FEATURES,), 0.05, np.float32)
        self._step = jax.jit(self._loss_and_update)

    @staticmethod
    def _loss_and_update(w, ref_logps, x, desirable):
        def loss_fn(w):
            logps = jax.nn.log_sigmoid(x @ w)
            logratio = logps - ref_logps
            losses = jnp.where(desirable, 1 - jax.nn.sigmoid(BETA * logratio), 1 - jax.nn.sigmoid(-BETA * logratio))
            return jnp.mean(losses), logps
        (loss, logps), g = jax.value_and_grad(loss_fn, has_aux=True)(w)
        return w - 0.5 * g, loss, logps

    def get_batch_loss_metrics(self, x_local, desirable_local):
        ref_logps = np.log(1 / (1 + np.exp(-(x_local @ self.ref)))).astype(np.float32)
        gx = jax.make_array_from_process_local_data(self.data, x_local)
        gd = jax.make_array_from_process_local_data(self.data, desirable_local)
        gr = jax.make_array_from_process_local_data(self.data, ref_logps)
        self.policy, loss, logps = self._step(self.policy, gr, gx, gd)
        policy_logps = np.asarray(logps.addressable_shards[0].data)
        chosen_rewards = BETA * (policy_logps[desirable_local] - ref_logps[desirable_local])
        rejected_rewards = BETA * (policy_logps[~desirable_local] - ref_logps[~desirable_local])
        metrics = {"loss": float(loss.addressable_shards[0].data)}
        local = np.array([chosen_rewards.sum(), len(chosen_rewards), rejected_rewards.sum(), len(rejected_rewards)],
                         np.float32)
        chosen_sum, num_chosen, rejected_sum, num_rejected = np.asarray(multihost_utils.process_allgather(local)).sum(0)
        metrics["rewards/chosen"] = float(chosen_sum / num_chosen) if num_chosen else 0.0
        metrics["rewards/rejected"] = float(rejected_sum / num_rejected) if num_rejected else 0.0
        return metrics


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    trainer = KTOTrainer(mesh)
    x, labels = make_dataset()
    rank, world = jax.process_index(), jax.process_count()
    global_batch = PER_DEVICE_BATCH * world
    for step in range(len(LABELS) // global_batch):
        rows = slice(step * global_batch + rank * PER_DEVICE_BATCH, step * global_batch + (rank + 1) * PER_DEVICE_BATCH)
        metrics = trainer.get_batch_loss_metrics(x[rows], labels[rows])
        print(f"RESULT step {step}", {k: round(v, 5) for k, v in sorted(metrics.items())})


if __name__ == "__main__":
    main()
