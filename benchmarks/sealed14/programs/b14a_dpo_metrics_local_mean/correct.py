# DPO training loop: stored reward metrics are gathered from every process before they are averaged at log time
# Source: https://github.com/huggingface/trl/pull/2474
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
BETA, LR = 0.5, 0.3


def logps(w, feats):
    return jax.nn.log_sigmoid(jnp.sum(feats * w, axis=-1))


def dpo_loss(w, ref_w, chosen, rejected):
    margin = BETA * ((logps(w, chosen) - logps(ref_w, chosen)) - (logps(w, rejected) - logps(ref_w, rejected)))
    return -jnp.mean(jax.nn.log_sigmoid(margin))


loss_and_grad = jax.jit(jax.value_and_grad(dpo_loss), out_shardings=(REPL, REPL))


class DPOTrainer:
    def __init__(self, w):
        self.w = jax.device_put(w, REPL)
        self.ref_w = jax.device_put(w.copy(), REPL)
        self._stored_metrics = defaultdict(list)

    def get_batch_metrics(self, chosen, rejected):
        w, ref = np.asarray(self.w), np.asarray(self.ref_w)
        chosen_rewards = BETA * (np.asarray(logps(w, chosen)) - np.asarray(logps(ref, chosen)))
        rejected_rewards = BETA * (np.asarray(logps(w, rejected)) - np.asarray(logps(ref, rejected)))
        return {"rewards/chosen": chosen_rewards.mean(), "rewards/rejected": rejected_rewards.mean(),
                "rewards/accuracies": (chosen_rewards > rejected_rewards).mean(),
                "rewards/margins": (chosen_rewards - rejected_rewards).mean()}

    def training_step(self, chosen, rejected):
        gc, gr = (jax.make_array_from_process_local_data(ROWS, a) for a in (chosen, rejected))
        loss, grad = loss_and_grad(self.w, self.ref_w, gc, gr)
        self.w = self.w - LR * grad
        for key, value in self.get_batch_metrics(chosen, rejected).items():
            self._stored_metrics[key].append(float(value))
        return float(loss)

    def log(self, logs):
        for key, metrics in sorted(self._stored_metrics.items()):
            gathered = multihost_utils.process_allgather(np.asarray(metrics, np.float32))   # all ranks' values
            logs[key] = round(float(np.mean(gathered)), 5)
        self._stored_metrics.clear()
        return logs


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(21 + rank)          # each process gets its own preference pairs
    trainer = DPOTrainer(np.array([0.2, -0.1, 0.4], np.float32))
    losses = []
    for step in range(4):
        chosen = (rng.normal(size=(4, 3)) + [0.8, 0.0, 0.3]).astype(np.float32)
        rejected = rng.normal(size=(4, 3)).astype(np.float32)
        losses.append(trainer.training_step(chosen, rejected))
    logs = trainer.log({"loss": round(float(np.mean(losses)), 5)})
    print("RESULT logs", logs)


if __name__ == "__main__":
    main()
