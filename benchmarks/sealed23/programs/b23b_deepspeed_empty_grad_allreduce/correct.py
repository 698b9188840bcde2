# A small DeepSpeed-like engine: the model has a shared encoder, a classification head and an
# auxiliary span-prediction head that only runs when a batch carries span labels. After backward the
# engine flattens the gradients of all parameters into one buffer and all-reduces it across
# data-parallel workers (the buffered all-reduce fallback path).
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN, FEATURES, CLASSES, SPAN = 8, 6, 3, 4


def init_params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "encoder.weight": jnp.asarray(rng.normal(scale=0.3, size=(FEATURES, HIDDEN)), jnp.float32),
        "cls_head.weight": jnp.asarray(rng.normal(scale=0.3, size=(HIDDEN, CLASSES)), jnp.float32),
        "span_head.weight": jnp.asarray(rng.normal(scale=0.3, size=(HIDDEN, SPAN)), jnp.float32),
    }


def forward_loss(used, batch):
    h = jnp.tanh(batch["x"] @ used["encoder.weight"])
    logits = h @ used["cls_head.weight"]
    loss = -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), batch["y"][:, None], 1))
    if "span_head.weight" in used:
        span = h @ used["span_head.weight"]
        loss = loss + jnp.mean((span - batch["span"]) ** 2)
    return loss


class DeepSpeedEngine:
    def __init__(self, params, lr=0.1):
        self.params = params
        self.lr = lr
        self.world_size = jax.process_count()
        self.global_steps = 0

    def backward(self, batch):
        names = ["encoder.weight", "cls_head.weight"]
        if batch.get("span") is not None:
            names.append("span_head.weight")
        used = {n: self.params[n] for n in names}
        loss, g = jax.value_and_grad(forward_loss)(used, batch)
        grads = {n: g.get(n) for n in self.params}  # parameters outside the graph keep grad None
        return loss, grads

    def buffered_allreduce_fallback(self, grads):
        flat, names = [], []
        for name, param in self.params.items():
            g = grads[name]
            if g is None:
                g = np.zeros(param.shape, np.float32)
            flat.append(np.asarray(g).ravel())
            names.append(name)
        buf = np.concatenate(flat)
        reduced = np.asarray(multihost_utils.process_allgather(buf)).sum(0) / self.world_size
        out, offset = {}, 0
        for name in names:
            size = self.params[name].size
            out[name] = reduced[offset:offset + size].reshape(self.params[name].shape)
            offset += size
        return out

    def step(self, batch):
        loss, grads = self.backward(batch)
        reduced = self.buffered_allreduce_fallback(grads)
        for name, g in reduced.items():
            self.params[name] = self.params[name] - self.lr * g
        self.global_steps += 1
        return float(loss)


def make_loader(rank, steps=6, batch_size=4):
    rng = np.random.default_rng(100 + rank)
    for step in range(steps):
        x = rng.normal(size=(batch_size, FEATURES)).astype(np.float32)
        y = rng.integers(0, CLASSES, size=batch_size)
        has_span = rng.random() < 0.5
        span = rng.normal(size=(batch_size, SPAN)).astype(np.float32) if has_span else None
        yield {"x": x, "y": y, "span": span}


def main():
    rank = jax.process_index()
    engine = DeepSpeedEngine(init_params())
    for batch in make_loader(rank):
        loss = engine.step(batch)
        print(f"rank {rank} step {engine.global_steps} loss {loss:.4f}")
    w = np.asarray(multihost_utils.process_allgather(np.asarray(engine.params["encoder.weight"])))
    print("RESULT global_steps", engine.global_steps)
    print("RESULT encoder_sum", round(float(w[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
