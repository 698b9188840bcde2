# Mid-epoch evaluation keyed on the progress bar's counter, but the bar is disabled (never advances) off the main process
# Source: https://github.com/huggingface/transformers/issues/31532
# Written for the mcjax sealed4 evaluation (not copied): a port of a transformers/accelerate "no_trainer" script bug
# to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class tqdm:
    """The part of tqdm the script relies on: a disabled bar ignores update() and keeps n at 0."""

    def __init__(self, iterable=None, total=None, disable=False):
        self.total = total if total is not None else len(iterable)
        self.disable = disable
        self.n = 0

    def update(self, n=1):
        if self.disable:
            return
        self.n += n

    def set_postfix(self, **kw):
        if not self.disable:
            print(f"[{self.n}/{self.total}]", kw)


class Accelerator:
    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
        self.is_main_process = jax.process_index() == 0

    def prepare_batch(self, local):
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("batch")), local)

    def gather_for_metrics(self, local):
        return multihost_utils.process_allgather(local)


def get_dataloader(num_batches, seed):
    rng = np.random.default_rng(seed + jax.process_index())
    return [(rng.normal(size=(8, 6)).astype(np.float32), rng.integers(0, 3, size=(8,)))
            for _ in range(num_batches)]


@jax.jit
def train_step(w, x, y):
    def loss_fn(w):
        logits = x @ w
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


def evaluate(accelerator, w, eval_dataloader):
    correct = total = 0
    for x, y in eval_dataloader:
        preds = np.argmax(x @ np.asarray(w), axis=-1)
        preds, refs = accelerator.gather_for_metrics(preds), accelerator.gather_for_metrics(y)
        correct += int(np.sum(preds == refs))
        total += refs.size
    return correct / total


def main(args):
    accelerator = Accelerator()
    train_dataloader = get_dataloader(6, 0)
    eval_dataloader = get_dataloader(2, 500)
    total_steps = args.num_train_epochs * len(train_dataloader)
    progress_bar = tqdm(range(total_steps), total=total_steps, disable=not accelerator.is_main_process)
    w = jnp.zeros((6, 3), jnp.float32)
    completed_steps, next_eval_step, accuracies = 0, args.eval_steps, []
    for epoch in range(args.num_train_epochs):
        for step, (x, y) in enumerate(train_dataloader):
            w, loss = train_step(w, accelerator.prepare_batch(x), accelerator.prepare_batch(y))
            progress_bar.update(1)
            completed_steps += 1
            if completed_steps >= next_eval_step:
                accuracies.append(evaluate(accelerator, w, eval_dataloader))
                progress_bar.set_postfix(eval_accuracy=accuracies[-1])
                next_eval_step += args.eval_steps
    return w, accuracies


parser = argparse.ArgumentParser()
parser.add_argument("--num_train_epochs", type=int, default=2)
parser.add_argument("--eval_steps", type=int, default=4)
w, accuracies = main(parser.parse_args([]))
print("RESULT accuracies", [round(a, 4) for a in accuracies])
print("RESULT w_norm", round(float(jnp.linalg.norm(w)), 4))
