# A speculative-decoding drafter evaluator reduces per-position accuracy only on ranks that saw eval batches
# Source: https://github.com/sgl-project/SpecForge/pull/637
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EvalConfig:
    ttt_length: int = 3          # draft positions scored per sample
    vocab: int = 24
    hidden: int = 8
    eval_files: tuple = ("eval-00000-of-00001.jsonl",)  # one small eval file
    records_per_file: int = 5


def files_for_rank(cfg, rank, world):
    return list(cfg.eval_files[rank::world])


def load_records(cfg, fname):
    rng = np.random.default_rng(17 + int(fname.split("-")[1]))  # same records whichever rank reads the file
    return [(rng.normal(size=(cfg.ttt_length, cfg.hidden)).astype(np.float32),
             rng.integers(0, cfg.vocab, size=cfg.ttt_length).astype(np.int32)) for _ in range(cfg.records_per_file)]


@jax.jit
def draft_eval(w, hidden, target):
    logits = hidden @ w
    logp = jax.nn.log_softmax(logits)
    nll = -jnp.take_along_axis(logp, target[:, None], axis=1)[:, 0]
    correct = (jnp.argmax(logits, axis=1) == target).astype(jnp.float32)
    return jnp.sum(nll), correct


def all_reduce_sum(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float64))).sum(axis=0)


class Evaluator:
    def __init__(self, cfg, w):
        self.cfg, self.w = cfg, w

    def run(self, rank, world):
        loss_x_tokens, total_tokens = 0.0, 0.0
        per_pos_correct = per_pos_denom = None
        for fname in files_for_rank(self.cfg, rank, world):
            for hidden, target in load_records(self.cfg, fname):
                nll, correct = draft_eval(self.w, hidden, target)
                loss_x_tokens += float(nll)
                total_tokens += len(target)
                if per_pos_correct is None:
                    per_pos_correct = np.zeros(self.cfg.ttt_length)
                    per_pos_denom = np.zeros(self.cfg.ttt_length)
                per_pos_correct += np.asarray(correct)
                per_pos_denom += 1.0
        loss_x_tokens, total_tokens = all_reduce_sum([loss_x_tokens, total_tokens])
        if per_pos_correct is not None:
            per_pos_correct = all_reduce_sum(per_pos_correct)
            per_pos_denom = all_reduce_sum(per_pos_denom)
        return loss_x_tokens / max(total_tokens, 1.0), per_pos_correct, per_pos_denom


def main():
    cfg = EvalConfig()
    w = jnp.asarray(np.random.default_rng(0).normal(0, 0.5, (cfg.hidden, cfg.vocab)).astype(np.float32))
    loss, correct, denom = Evaluator(cfg, w).run(jax.process_index(), jax.process_count())
    print("RESULT eval_loss", round(float(loss), 5))
    if correct is not None:
        print("RESULT acc_per_pos", np.round(correct / np.maximum(denom, 1.0), 4).tolist())
    multihost_utils.sync_global_devices("eval_done")


main()
