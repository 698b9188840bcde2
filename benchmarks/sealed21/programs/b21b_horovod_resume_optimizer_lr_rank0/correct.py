# Horovod-style ImageNet example flow with checkpoint resume: the checkpoint is read on rank 0
# only, then model parameters and optimizer state are broadcast from rank 0 before training
# continues with gradients averaged across workers.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHECKPOINT_FORMAT = "checkpoint-{epoch}.npz"


class SGD:
    def __init__(self, params, lr=0.1, momentum=0.9):
        self.param_groups = [{"lr": lr, "momentum": momentum}]
        self.state = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params, grads):
        group = self.param_groups[0]
        for k in params:
            self.state[k] = group["momentum"] * self.state[k] + grads[k]
            params[k] = params[k] - group["lr"] * self.state[k]
        return params

    def state_dict(self):
        return {"param_groups": [dict(g) for g in self.param_groups], "state": dict(self.state)}

    def load_state_dict(self, sd):
        self.param_groups = [dict(g) for g in sd["param_groups"]]
        self.state = {k: np.asarray(v) for k, v in sd["state"].items()}


def broadcast_parameters(params, root_rank=0):
    return {k: np.asarray(multihost_utils.broadcast_one_to_all(v, is_source=jax.process_index() == root_rank))
            for k, v in params.items()}


def broadcast_optimizer_state(optimizer, root_rank=0):
    optimizer.state = broadcast_parameters(optimizer.state, root_rank)
    for group in optimizer.param_groups:
        for option, value in group.items():
            group[option] = float(multihost_utils.broadcast_one_to_all(
                np.float32(value), is_source=jax.process_index() == root_rank))


def allreduce_grads(grads):
    return {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for k, g in grads.items()}


grad_fn = jax.jit(jax.grad(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)))


def train_epoch(params, optimizer, data):
    for x, y in data:
        grads = allreduce_grads(grad_fn(params, x, y))
        params = optimizer.step(params, grads)
    return params


def make_data(rank, epoch, n=4, dim=4):
    rng = np.random.default_rng(1000 * epoch + rank)
    xs = rng.normal(size=(n, 8, dim)).astype(np.float32)
    return [(x, x @ np.arange(1.0, dim + 1, dtype=np.float32)) for x in xs]


def init_model(dim=4):
    return {"w": np.zeros(dim, np.float32), "b": np.zeros((), np.float32)}


def main(resume_epoch=2, total_epochs=4):
    rank = jax.process_index()
    ckpt_dir = os.path.join(tempfile.gettempdir(), f"hvd_ckpt_{os.environ.get('JOB_ID', 'local')}")
    os.makedirs(ckpt_dir, exist_ok=True)

    # first run: train, decay the learning rate, checkpoint on rank 0
    params = init_model()
    optimizer = SGD(params)
    for epoch in range(resume_epoch):
        params = train_epoch(params, optimizer, make_data(rank, epoch))
        optimizer.param_groups[0]["lr"] *= 0.1
    if rank == 0:
        sd = optimizer.state_dict()
        np.savez(os.path.join(ckpt_dir, CHECKPOINT_FORMAT.format(epoch=resume_epoch)), lr=sd["param_groups"][0]["lr"],
                 **{f"model.{k}": v for k, v in params.items()}, **{f"opt.{k}": v for k, v in sd["state"].items()})
    multihost_utils.sync_global_devices("checkpoint written")

    # restarted job: fresh objects everywhere, checkpoint restored on rank 0
    params = init_model()
    optimizer = SGD(params)
    if rank == 0:
        ckpt = np.load(os.path.join(ckpt_dir, CHECKPOINT_FORMAT.format(epoch=resume_epoch)))
        params = {k[6:]: ckpt[k] for k in ckpt.files if k.startswith("model.")}
        optimizer.load_state_dict({"param_groups": [{"lr": float(ckpt["lr"]), "momentum": 0.9}],
                                   "state": {k[4:]: ckpt[k] for k in ckpt.files if k.startswith("opt.")}})
    params = broadcast_parameters(params, root_rank=0)
    broadcast_optimizer_state(optimizer, root_rank=0)
    for epoch in range(resume_epoch, total_epochs):
        params = train_epoch(params, optimizer, make_data(rank, epoch))

    print(f"rank {rank}: resumed with lr={optimizer.param_groups[0]['lr']:.4g}")
    print("RESULT weights", np.round(params["w"], 4).tolist())
    print("RESULT bias", round(float(params["b"]), 4))


if __name__ == "__main__":
    main()
