# SFT stage of a small train-an-LLM-from-scratch pipeline: the model is wrapped for data-parallel
# training (the wrapper's forward broadcasts the module buffers from rank 0, like torch DDP with
# broadcast_buffers=True, and gradients are all-reduced), evaluated periodically on every rank, and
# evaluated one last time on the main process before the checkpoint is written.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class DistContext:
    rank: int
    world_size: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


class TinyLM:
    def __init__(self, vocab=16, dim=8, seed=0):
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        self.params = {"emb": jax.random.normal(k1, (vocab, dim)) * 0.1,
                       "out": jax.random.normal(k2, (dim, vocab)) * 0.1}
        self.buffers = {"running_norm": np.ones((), np.float32)}
        self._loss = jax.jit(jax.value_and_grad(self.loss_fn))

    @staticmethod
    def loss_fn(params, norm, tokens, targets):
        h = params["emb"][tokens] / norm
        logits = h @ params["out"]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    def forward(self, tokens, targets):
        return self._loss(self.params, self.buffers["running_norm"], tokens, targets)

    __call__ = forward


class DDPWrapper:
    def __init__(self, module: TinyLM):
        self.module = module

    def __call__(self, tokens, targets):
        self.module.buffers = {k: np.asarray(multihost_utils.broadcast_one_to_all(v))
                               for k, v in self.module.buffers.items()}
        return self.module.forward(tokens, targets)

    def all_reduce_grads(self, grads):
        return jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)


def unwrap(model):
    return model.module if isinstance(model, DDPWrapper) else model


def make_sft_data(rank, n_batches=6, batch=8, seq=12, vocab=16):
    rng = np.random.default_rng(2024 + rank)
    toks = rng.integers(0, vocab, size=(n_batches, batch, seq))
    return [(t, (t + 1) % vocab) for t in toks]


def evaluate(model, batches):
    losses = [float(model(x, y)[0]) for x, y in batches]
    return sum(losses) / len(losses)


def train_sft(ctx: DistContext, max_epochs=2, lr=0.5, eval_every=1):
    model = DDPWrapper(TinyLM())
    train, val = make_sft_data(ctx.rank), make_sft_data(ctx.rank + 100, n_batches=2)
    for epoch in range(max_epochs):
        for x, y in train:
            loss, grads = model(x, y)
            grads = model.all_reduce_grads(grads)
            m = unwrap(model)
            m.params = jax.tree_util.tree_map(lambda p, g: p - lr * g, m.params, grads)
        if (epoch + 1) % eval_every == 0:
            val_loss = evaluate(model, val)
            print(f"rank {ctx.rank} epoch {epoch} val_loss {val_loss:.4f}")
    return model, val


def main():
    ctx = DistContext(jax.process_index(), jax.process_count())
    model, val = train_sft(ctx)
    w = np.asarray(multihost_utils.process_allgather(np.asarray(unwrap(model).params["out"])))
    print("RESULT out_weights_sum", round(float(w[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))
    if ctx.is_main:
        final_loss = evaluate(unwrap(model), val)
        ckpt = os.path.join(tempfile.mkdtemp(prefix="sft_ckpt_"), "final.json")
        with open(ckpt, "w") as f:
            json.dump({"final_val_loss": final_loss,
                       "out": np.asarray(unwrap(model).params["out"]).tolist()}, f)
        print(f"final val loss {final_loss:.4f}; checkpoint written to {ckpt}")


if __name__ == "__main__":
    main()
