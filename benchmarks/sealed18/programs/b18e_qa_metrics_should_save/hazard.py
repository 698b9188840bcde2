# Extractive-QA fine-tuning with periodic evaluation and best-checkpoint tracking (metric_for_best_model=eval_f1)
# Source: https://github.com/huggingface/transformers/issues/30819
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainingArguments:
    learning_rate: float = 0.1
    max_steps: int = 6
    eval_steps: int = 2
    seq_len: int = 24
    metric_for_best_model: str = "eval_f1"
    greater_is_better: bool = True

    @property
    def should_save(self):
        return jax.process_index() == 0


def compute_metrics(start_pred, end_pred, start_true, end_true):
    overlap = np.clip(np.minimum(end_pred, end_true) - np.maximum(start_pred, start_true) + 1, 0, None)
    prec = overlap / np.maximum(end_pred - start_pred + 1, 1)
    rec = overlap / (end_true - start_true + 1)
    f1 = np.where(overlap > 0, 2 * prec * rec / np.maximum(prec + rec, 1e-9), 0.0)
    return {"exact_match": float(np.mean((start_pred == start_true) & (end_pred == end_true)) * 100),
            "f1": float(np.mean(f1) * 100)}


def post_processing_function(start_logits, end_logits):
    start = start_logits.argmax(-1)
    end = np.maximum(start, end_logits.argmax(-1))
    return start, end


class QuestionAnsweringTrainer:
    def __init__(self, args, mesh, params, train_data, eval_data):
        self.args, self.mesh, self.params = args, mesh, params
        self.train_data, self.eval_data = train_data, eval_data
        self.best_metric, self.best_model_checkpoint = None, None
        self.sharding = NamedSharding(mesh, P("data"))
        self._step = jax.jit(self._train_step)

    def _logits(self, params, x):
        h = jnp.tanh(x @ params["w"])
        return h @ params["start"], h @ params["end"]

    def _train_step(self, params, x, s, e):
        def loss_fn(p):
            ls, le = self._logits(p, x)
            return -(jnp.take_along_axis(jax.nn.log_softmax(ls), s[:, None], 1).mean()
                     + jnp.take_along_axis(jax.nn.log_softmax(le), e[:, None], 1).mean())
        loss, g = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda a, b: a - self.args.learning_rate * b, params, g), loss

    def evaluate(self):
        x, s, e = self.eval_data
        ls, le = jax.jit(self._logits)(self.params, jax.make_array_from_process_local_data(self.sharding, x))
        start_logits = np.asarray(multihost_utils.process_allgather(ls, tiled=True))
        end_logits = np.asarray(multihost_utils.process_allgather(le, tiled=True))
        labels = multihost_utils.process_allgather(np.stack([s, e]), tiled=False)
        metrics = {"eval_samples": int(start_logits.shape[0])}
        if self.args.should_save:
            start_pred, end_pred = post_processing_function(start_logits, end_logits)
            true_s, true_e = np.concatenate(labels[:, 0]), np.concatenate(labels[:, 1])
            metrics.update({f"eval_{k}": v for k, v in compute_metrics(start_pred, end_pred, true_s, true_e).items()})
        return metrics

    def _save_checkpoint(self, metrics, step):
        metric_value = metrics[self.args.metric_for_best_model]
        better = np.greater if self.args.greater_is_better else np.less
        if self.best_metric is None or better(metric_value, self.best_metric):
            self.best_metric, self.best_model_checkpoint = metric_value, f"checkpoint-{step}"

    def train(self):
        x, s, e = self.train_data
        for step in range(1, self.args.max_steps + 1):
            batch = [jax.make_array_from_process_local_data(self.sharding, a) for a in (x, s, e)]
            self.params, loss = self._step(self.params, *batch)
            if step % self.args.eval_steps == 0:
                metrics = self.evaluate()
                self._save_checkpoint(metrics, step)
        return float(loss.addressable_shards[0].data)


def make_split(rank, n, seq_len, offset):
    rng = np.random.default_rng(offset + rank)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    s = rng.integers(0, seq_len // 2, size=n).astype(np.int32)
    return x, s, (s + rng.integers(0, 4, size=n)).astype(np.int32)


def main():
    args = TrainingArguments()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    key = np.random.default_rng(0)
    params = {"w": key.normal(size=(8, 16)).astype(np.float32) * 0.3,
              "start": key.normal(size=(16, args.seq_len)).astype(np.float32) * 0.3,
              "end": key.normal(size=(16, args.seq_len)).astype(np.float32) * 0.3}
    rep = NamedSharding(mesh, P())
    params = {k: jax.make_array_from_process_local_data(rep, v) for k, v in params.items()}
    rank = jax.process_index()
    trainer = QuestionAnsweringTrainer(args, mesh, params, make_split(rank, 32, args.seq_len, 10),
                                       make_split(rank, 16, args.seq_len, 20))
    loss = trainer.train()
    print("RESULT final_loss", round(loss, 4))
    print("RESULT best", trainer.best_model_checkpoint, round(trainer.best_metric, 3))


if __name__ == "__main__":
    main()
