# A minimal Lightning-style trainer: training_step may return None to skip a batch (e.g. a batch
# whose targets were all filtered out by the collate function), otherwise the loss gradient is
# all-reduced across data-parallel workers before the optimizer step.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

IGNORE_INDEX = -1


class DetectionDataModule:
    def __init__(self, rank, num_batches=10, batch_size=8, features=6):
        rng = np.random.default_rng(1234 + rank)
        self.x = rng.normal(size=(num_batches, batch_size, features)).astype(np.float32)
        self.y = (self.x.sum(-1) > 0).astype(np.int32)
        # some images carry no usable annotation; the collate fn marks them as ignored
        empty = rng.random(size=(num_batches, batch_size)) < 0.6
        self.y[empty] = IGNORE_INDEX

    def train_dataloader(self):
        return list(zip(self.x, self.y))


class LitClassifier:
    def __init__(self, features=6, lr=0.5):
        self.params = {"w": jnp.zeros(features), "b": jnp.zeros(())}
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(params, x, y, mask):
        logits = x @ params["w"] + params["b"]
        yf = y.astype(jnp.float32)
        per = jnp.logaddexp(0.0, logits) - yf * logits
        return jnp.sum(per * mask) / jnp.maximum(jnp.sum(mask), 1.0)

    def training_step(self, batch, batch_idx):
        x, y = batch
        mask = (y != IGNORE_INDEX).astype(np.float32)
        if mask.sum() == 0:
            return None
        loss, grads = self._grad(self.params, x, np.maximum(y, 0), mask)
        return {"loss": loss, "grads": grads}


class Trainer:
    def __init__(self, max_epochs=2):
        self.max_epochs = max_epochs
        self.global_step = 0

    def _all_reduce(self, grads):
        flat, tree = jax.tree_util.tree_flatten(grads)
        out = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for g in flat]
        return jax.tree_util.tree_unflatten(tree, out)

    def fit(self, module, datamodule):
        losses = []
        for epoch in range(self.max_epochs):
            for batch_idx, batch in enumerate(datamodule.train_dataloader()):
                out = module.training_step(batch, batch_idx)
                if out is None:
                    continue
                grads = self._all_reduce(out["grads"])
                module.params = jax.tree_util.tree_map(lambda p, g: p - module.lr * g, module.params, grads)
                losses.append(float(out["loss"]))
                self.global_step += 1
        return losses


def main():
    rank = jax.process_index()
    dm = DetectionDataModule(rank)
    model = LitClassifier()
    trainer = Trainer(max_epochs=2)
    losses = trainer.fit(model, dm)
    print(f"rank {rank}: {len(losses)} optimizer steps, last loss {losses[-1]:.4f}")
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params["w"])))
    print("RESULT global_step", trainer.global_step)
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
