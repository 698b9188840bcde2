# The best-checkpoint hook decides on rank 0 (where the evaluation results exist) and broadcasts it; all save
# Source: https://github.com/Oneflow-Inc/libai/pull/172
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

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_best_ckpt_hook_main_only_metric",
                       os.environ.get("JOB_ID", "local"))
CFG = {"max_iter": 6, "eval_period": 2, "val_metric": "acc@1"}


class Checkpointer:
    """Gathers the 2-d-parallel sharded weights to every host; rank 0 writes the file."""

    def __init__(self, model):
        self.model = model

    def save(self, name, **extra):
        full = multihost_utils.process_allgather(self.model.weights, tiled=True)
        if jax.process_index() == 0:
            os.makedirs(OUT_DIR, exist_ok=True)
            with open(os.path.join(OUT_DIR, f"{name}.json"), "w") as f:
                json.dump({"weights": np.asarray(full).round(6).tolist(), **extra}, f)


class Model:
    def __init__(self):
        self.mesh = jax.make_mesh((jax.device_count(),), ("model",))
        self.sharding = NamedSharding(self.mesh, P("model"))
        self.weights = jax.make_array_from_process_local_data(
            self.sharding, np.full((3,), 0.2 * (jax.process_index() + 1), np.float32))
        self.step = jax.jit(lambda w: w + 0.1 * (1.0 - jnp.mean(w)), out_shardings=self.sharding)
        self.score = jax.jit(lambda w: jnp.exp(-jnp.sum((w - 0.6) ** 2)), out_shardings=NamedSharding(self.mesh, P()))


def evaluate(model):
    """Like the detectron2-style evaluator: the reduced results only exist on the main process."""
    acc = float(model.score(model.weights))
    if jax.process_index() != 0:
        return {}
    return {"acc@1": acc}


class BestCheckpointer:
    def __init__(self, checkpointer, val_metric):
        self.checkpointer, self.val_metric = checkpointer, val_metric
        self.best_metric, self.best_iter = None, None

    def after_eval(self, results, iteration):
        latest = results.get(self.val_metric)
        flag = np.zeros((1,), np.int32)
        if latest is not None and (self.best_metric is None or latest > self.best_metric):
            self.best_metric, self.best_iter = latest, iteration
            flag[0] = 1
        if int(multihost_utils.broadcast_one_to_all(flag)[0]):
            self.checkpointer.save("model_best", iteration=iteration)


def main():
    model = Model()
    hook = BestCheckpointer(Checkpointer(model), CFG["val_metric"])
    for it in range(1, CFG["max_iter"] + 1):
        model.weights = model.step(model.weights)
        if it % CFG["eval_period"] == 0:
            hook.after_eval(evaluate(model), it)
    final = float(model.score(model.weights))
    print("RESULT final_acc", round(final, 5))
    print("RESULT weights_sum", round(float(jnp.sum(multihost_utils.process_allgather(model.weights, tiled=True))), 5))


main()
