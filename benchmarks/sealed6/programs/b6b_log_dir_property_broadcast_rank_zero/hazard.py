# A rank-zero-only fit-start hook reads trainer.log_dir, a property that broadcasts the directory
# from rank 0: only rank 0 enters that broadcast while the other rank starts training
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/18148 (port of the Lightning DDP freeze to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import functools
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))


def rank_zero_only(fn):
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if jax.process_index() == 0:
            return fn(*args, **kwargs)
        return None
    return wrapped


class Strategy:
    def broadcast(self, text: str, src: int = 0) -> str:
        buf = np.zeros(256, np.uint8)
        raw = text.encode()[:256]
        buf[:len(raw)] = np.frombuffer(raw, np.uint8)
        out = multihost_utils.broadcast_one_to_all(buf, is_source=jax.process_index() == src)
        return bytes(np.asarray(out, np.uint8)).rstrip(b"\0").decode()


class Trainer:
    def __init__(self, root_dir, max_steps):
        self.root_dir, self.max_steps = Path(root_dir), max_steps
        self.strategy = Strategy()
        self.version = os.getpid()  # a logger picks the next free version on the process that asks

    @property
    def log_dir(self) -> str:
        dirpath = str(self.root_dir / f"version_{self.version}")
        return self.strategy.broadcast(dirpath)

    def fit(self, module, batches):
        module.trainer = self
        module.on_fit_start()
        params = module.init_params()
        for step in range(self.max_steps):
            params, loss = module.training_step(params, batches(step))
        return params, float(loss)


@jax.jit
def _train_step(params, x, y):
    loss_fn = lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), loss


class RegressionModule:
    hparams = {"lr": 0.1, "features": 6}

    @rank_zero_only
    def on_fit_start(self):
        out = Path(self.trainer.log_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "hparams.json").write_text(json.dumps(self.hparams))

    def init_params(self):
        repl = NamedSharding(MESH, P())
        return jax.device_put({"w": jnp.zeros((6, 1)), "b": jnp.zeros((1,))}, repl)

    def training_step(self, params, batch):
        x, y = (jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a) for a in batch)
        return _train_step(params, x, y)


def batches(step):
    rng = np.random.default_rng(100 * step + jax.process_index())
    x = rng.normal(size=(8, 6)).astype(np.float32)
    return x, (x.sum(axis=1, keepdims=True) * 0.5).astype(np.float32)


trainer = Trainer(Path(tempfile.gettempdir()) / f"b6b_lightning_{os.environ.get('JOB_ID', 'local')}", max_steps=5)
params, loss = trainer.fit(RegressionModule(), batches)
print("RESULT loss", round(loss, 5), flush=True)
print("RESULT w", np.round(np.asarray(params["w"]).ravel(), 4).tolist(), flush=True)
