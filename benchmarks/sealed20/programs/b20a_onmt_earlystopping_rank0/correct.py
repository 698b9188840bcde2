# Multi-GPU style training loop (one process per "GPU") with periodic validation and a patience
# based early-stopping mechanism, in the shape of OpenNMT-py's Trainer: validation statistics are
# gathered from all workers before they are reported.
import math
import os
from dataclasses import dataclass

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Opt:
    train_steps: int = 300
    valid_steps: int = 10
    early_stopping: int = 3
    batch_size: int = 16
    vocab: int = 50
    hidden: int = 32
    learning_rate: float = 1.0


class Statistics:
    def __init__(self, loss=0.0, n_words=0):
        self.loss, self.n_words = loss, n_words

    def ppl(self):
        return math.exp(min(self.loss / self.n_words, 100))


class EarlyStopping:
    def __init__(self, tolerance):
        self.tolerance = tolerance
        self.current_tolerance = tolerance
        self.best_ppl = float("inf")

    def __call__(self, valid_stats, step):
        if valid_stats.ppl() < self.best_ppl:
            self.best_ppl = valid_stats.ppl()
            self.current_tolerance = self.tolerance
        else:
            self.current_tolerance -= 1
            print(f"step {step}: decreasing patience: {self.current_tolerance}/{self.tolerance}")

    def has_stopped(self):
        return self.current_tolerance <= 0


def make_corpus(rank, opt, n_batches, noisy):
    rng = np.random.default_rng(17 + 1000 * rank + (7 if noisy else 0))
    src = rng.integers(0, opt.vocab, size=(n_batches, opt.batch_size))
    tgt = (src * 7 + 3) % opt.vocab
    if noisy:
        tgt = rng.integers(0, opt.vocab, size=tgt.shape)
    return src, tgt


def loss_fn(params, src, tgt):
    h = jnp.tanh(params["emb"][src] @ params["w"])
    logp = jax.nn.log_softmax(h @ params["out"])
    return -jnp.sum(jnp.take_along_axis(logp, tgt[:, None], axis=1))


grad_fn = jax.jit(jax.value_and_grad(loss_fn))
eval_fn = jax.jit(loss_fn)


class Trainer:
    def __init__(self, params, opt, gpu_rank, earlystopper=None):
        self.params, self.opt, self.gpu_rank = params, opt, gpu_rank
        self.earlystopper = earlystopper

    def _maybe_gather_stats(self, stats):
        gathered = np.asarray(multihost_utils.process_allgather(np.array([stats.loss, stats.n_words], np.float32)))
        return Statistics(float(gathered[:, 0].sum()), int(gathered[:, 1].sum()))

    def validate(self, valid_src, valid_tgt):
        stats = Statistics()
        for src, tgt in zip(valid_src, valid_tgt):
            stats.loss += float(eval_fn(self.params, src, tgt))
            stats.n_words += len(tgt)
        return self._maybe_gather_stats(stats)

    def train(self, train_src, train_tgt, valid_src, valid_tgt):
        step = 0
        for step in range(1, self.opt.train_steps + 1):
            i = (step - 1) % len(train_src)
            loss, grads = grad_fn(self.params, train_src[i], train_tgt[i])
            flat, unravel = jax.flatten_util.ravel_pytree(grads)
            mean = np.asarray(multihost_utils.process_allgather(np.asarray(flat))).mean(axis=0)
            lr = self.opt.learning_rate / self.opt.batch_size
            self.params = jax.tree_util.tree_map(lambda p, g: p - lr * g, self.params, unravel(jnp.asarray(mean)))
            if step % self.opt.valid_steps == 0:
                valid_stats = self.validate(valid_src, valid_tgt)
                if self.gpu_rank == 0:
                    print(f"Validation perplexity at step {step}: {valid_stats.ppl():.3f}")
                if self.earlystopper is not None:
                    self.earlystopper(valid_stats, step)
                    if self.earlystopper.has_stopped():
                        break
        return step


def build_trainer(opt, gpu_rank, params):
    earlystopper = EarlyStopping(opt.early_stopping) if opt.early_stopping > 0 else None
    return Trainer(params, opt, gpu_rank, earlystopper=earlystopper)


def main():
    opt = Opt()
    gpu_rank = jax.process_index()
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
    params = {"emb": jax.random.normal(k1, (opt.vocab, opt.hidden)) * 0.3,
              "w": jax.random.normal(k2, (opt.hidden, opt.hidden)) * 0.3,
              "out": jax.random.normal(k3, (opt.hidden, opt.vocab)) * 0.3}
    train_src, train_tgt = make_corpus(gpu_rank, opt, n_batches=4, noisy=True)
    valid_src, valid_tgt = make_corpus(gpu_rank, opt, n_batches=2, noisy=False)
    trainer = build_trainer(opt, gpu_rank, params)
    last_step = trainer.train(train_src, train_tgt, valid_src, valid_tgt)
    final = trainer.validate(valid_src, valid_tgt)
    print("RESULT last_step", last_step)
    print("RESULT final_valid_ppl", round(final.ppl(), 3))


if __name__ == "__main__":
    main()
