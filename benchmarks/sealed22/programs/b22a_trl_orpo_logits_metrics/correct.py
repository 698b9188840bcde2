# ORPO-style preference training step: each rank pads its own batch of (chosen, rejected)
# sequences to the longest sequence in that batch, computes the odds-ratio loss, all-reduces the
# gradients, and logs metrics gathered from every rank (`gather_for_metrics`).
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, PAD = 16, 8, 0


def gather_for_metrics(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def preference_shard(rank, step, batch=2):
    rng = np.random.default_rng(1000 * step + rank)
    lengths = rng.integers(3, 9, size=2 * batch)
    seqs = [rng.integers(1, VOCAB, size=n).astype(np.int32) for n in lengths]
    return seqs[:batch], seqs[batch:]


def pad_collate(seqs):
    max_len = max(len(s) for s in seqs)
    out = np.full((len(seqs), max_len), PAD, np.int32)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return out


def init_params(seed=0):
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    return {"emb": jax.random.normal(k1, (VOCAB, DIM)) * 0.2, "out": jax.random.normal(k2, (DIM, VOCAB)) * 0.2}


def forward(params, tokens):
    return params["emb"][tokens] @ params["out"]          # [B, L, V]


def seq_logps(logits, tokens):
    logp = jax.nn.log_softmax(logits, -1)
    tok = jnp.take_along_axis(logp, tokens[..., None], -1)[..., 0]
    mask = (tokens != PAD).astype(jnp.float32)
    return (tok * mask).sum(-1) / mask.sum(-1)


def orpo_loss(params, chosen, rejected, beta=0.1):
    chosen_logits, rejected_logits = forward(params, chosen), forward(params, rejected)
    lp_c, lp_r = seq_logps(chosen_logits, chosen), seq_logps(rejected_logits, rejected)
    log_odds = (lp_c - lp_r) - (jnp.log1p(-jnp.exp(lp_c)) - jnp.log1p(-jnp.exp(lp_r)))
    ratio = jax.nn.log_sigmoid(log_odds)
    loss = -lp_c.mean() - beta * ratio.mean()
    return loss, (chosen_logits, rejected_logits, log_odds)


grad_fn = jax.jit(jax.value_and_grad(orpo_loss, has_aux=True))


class ORPOTrainer:
    def __init__(self, lr=0.5):
        self.params = init_params()
        self.lr = lr
        self.history = []

    def get_batch_loss_metrics(self, chosen, rejected):
        (loss, (chosen_logits, rejected_logits, log_odds)), grads = grad_fn(self.params, chosen, rejected)
        grads = jax.tree_util.tree_map(lambda g: gather_for_metrics(g).mean(0), grads)
        metrics = {
            "logits/rejected": gather_for_metrics(rejected_logits.mean()).mean(),
            "logits/chosen": gather_for_metrics(chosen_logits.mean()).mean(),
            "log_odds_ratio": gather_for_metrics(log_odds).mean(),
        }
        return loss, grads, metrics

    def train(self, steps=3):
        rank = jax.process_index()
        for step in range(steps):
            chosen, rejected = preference_shard(rank, step)
            chosen, rejected = pad_collate(chosen), pad_collate(rejected)
            loss, grads, metrics = self.get_batch_loss_metrics(chosen, rejected)
            self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)
            self.history.append({k: round(float(v), 4) for k, v in metrics.items()})


def main():
    trainer = ORPOTrainer()
    trainer.train()
    w = gather_for_metrics(trainer.params["out"])
    print("RESULT metrics", trainer.history[-1])
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
