# Data-parallel seq2seq trainer: periodic evaluation on the master worker with metric-based early stopping
# Source: https://github.com/OpenNMT/OpenNMT-tf/issues/985 (fix: https://github.com/OpenNMT/OpenNMT-tf/pull/986)
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"train": {"max_step": 30, "batch_size": 8, "learning_rate": 0.002},
          "eval": {"steps": 3, "early_stopping": {"metric": "accuracy", "min_improvement": 0.5, "steps": 2}}}
VOCAB, DIM = 12, 8


def early_stop(metrics, steps, min_improvement=0, higher_is_better=False):
    """Stop when none of the last `steps` values improved on the value just before them."""
    if len(metrics) < steps + 1:
        return False
    ref, recent = metrics[-steps - 1], metrics[-steps:]
    if higher_is_better:
        return max(recent) - ref < min_improvement
    return ref - min(recent) < min_improvement


def forward(params, src):
    h = jnp.tanh(params["embedding"][src].mean(axis=1) @ params["encoder"])
    return h @ params["projection"]


def loss_fn(params, src, tgt):
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(forward(params, src)), tgt[:, None], 1))


class Evaluator:
    def __init__(self, features, labels, early_stopping):
        self.features, self.labels = features, labels
        self.metric, self.es_steps = early_stopping["metric"], early_stopping["steps"]
        self.min_improvement = early_stopping["min_improvement"]
        self.history, self.last_evaluated_step = [], None
        self._predict = jax.jit(lambda p, x: jnp.argmax(forward(p, x), -1))

    def __call__(self, params, step):
        local = jax.tree.map(lambda a: a.addressable_shards[0].data, params)
        pred = np.asarray(self._predict(local, self.features))
        self.history.append(float(np.mean(pred == self.labels) * 100))
        self.last_evaluated_step = step
        print(f"Evaluation at step {step}: {self.metric} = {self.history[-1]:.2f}")

    def should_stop(self):
        return early_stop(self.history, self.es_steps, min_improvement=self.min_improvement, higher_is_better=True)


class Trainer:
    def __init__(self, mesh, params, learning_rate):
        self.mesh, self.params = mesh, params
        self.batch_sharding = NamedSharding(mesh, P("replica"))
        self._train_step = jax.jit(lambda p, x, y: jax.tree.map(
            lambda w, g: w - learning_rate * g, p, jax.grad(loss_fn)(p, x, y)))
        self._loss = jax.jit(loss_fn)

    @property
    def is_master(self):
        return jax.process_index() == 0

    def __call__(self, dataset, max_step, eval_steps, evaluator=None):
        step = 0
        for src, tgt in dataset:
            x = jax.make_array_from_process_local_data(self.batch_sharding, src)
            y = jax.make_array_from_process_local_data(self.batch_sharding, tgt)
            self.params = self._train_step(self.params, x, y)
            step += 1
            if step % eval_steps == 0:
                if self._evaluate(evaluator, step):
                    print("Early stopping conditions are met. Exiting.")
                    break
            if step >= max_step:
                break
        return step, float(self._loss(self.params, x, y).addressable_shards[0].data)

    def _evaluate(self, evaluator, step):
        """Runs evaluation for step. Returns True if early stopping conditions are met."""
        if not self.is_master or evaluator is None or step == evaluator.last_evaluated_step:
            return False
        evaluator(self.params, step)
        return evaluator.should_stop()


class DistributedTrainer(Trainer):
    @property
    def num_replicas(self):
        return jax.process_count()


def make_dataset(rank, batch_size, seed):
    rng = np.random.default_rng(seed + rank)
    while True:
        src = rng.integers(0, VOCAB, size=(batch_size, 5)).astype(np.int32)
        yield src, (src.sum(axis=1) % VOCAB).astype(np.int32)


def main():
    mesh = Mesh(np.array(jax.devices()), ("replica",))
    init = np.random.default_rng(3)
    params = {"embedding": init.normal(size=(VOCAB, DIM)), "encoder": init.normal(size=(DIM, DIM)) * 0.5,
              "projection": init.normal(size=(DIM, VOCAB)) * 0.5}
    rep = NamedSharding(mesh, P())
    params = {k: jax.make_array_from_process_local_data(rep, v.astype(np.float32)) for k, v in params.items()}
    val_src, val_tgt = next(make_dataset(0, 64, 999))
    evaluator = Evaluator(val_src, val_tgt, CONFIG["eval"]["early_stopping"])
    trainer = DistributedTrainer(mesh, params, CONFIG["train"]["learning_rate"])
    last_step, loss = trainer(make_dataset(jax.process_index(), CONFIG["train"]["batch_size"], 0),
                              CONFIG["train"]["max_step"], CONFIG["eval"]["steps"], evaluator)
    multihost_utils.sync_global_devices("training_finished")
    print("RESULT last_step", last_step)
    print("RESULT final_batch_loss", round(loss, 4))


if __name__ == "__main__":
    main()
