# Experiment tracker is initialised on the main process only, with no error handling and no rendezvous after it
# Source: https://github.com/starVLA/starVLA/pull/369
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import json
import os
import socket
import tempfile
from dataclasses import dataclass, field
from urllib.parse import urlparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
LOG_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed3_tracker", os.environ.get("JOB_ID", "local"))


@dataclass
class TrackerConfig:
    project: str = "vla-pretrain"
    # blocked / unreachable endpoint on this cluster (nothing listens on the discard port)
    base_url: str = field(default_factory=lambda: os.environ.get("WANDB_BASE_URL", "http://127.0.0.1:9"))


class RemoteRun:
    def __init__(self, cfg: TrackerConfig):
        url = urlparse(cfg.base_url)
        self._sock = socket.create_connection((url.hostname, url.port), timeout=2.0)
        self.history = []

    def log(self, row: dict) -> None:
        self.history.append(row)

    def finish(self) -> None:
        self._sock.close()


class VLATrainer:
    def __init__(self, cfg: TrackerConfig):
        self.cfg = cfg
        self.is_main = jax.process_index() == 0
        self.run = None
        self._init_wandb()
        self.w = jax.device_put(jnp.zeros((4, 1), jnp.float32), REPL)
        self.rng = np.random.default_rng(11 + jax.process_index())

    def _init_wandb(self) -> None:
        if self.is_main:
            self.run = RemoteRun(self.cfg)

    def _log(self, row: dict) -> None:
        if self.is_main and self.run is not None:
            self.run.log(row)

    def train(self, steps: int) -> float:
        loss = None
        for step in range(steps):
            x = self.rng.normal(size=(8, 4)).astype(np.float32)
            x = jax.make_array_from_process_local_data(DATA, x)
            y = jax.make_array_from_process_local_data(DATA, np.ones((8, 1), np.float32))
            self.w, loss = train_step(self.w, x, y)
            self._log({"step": step, "loss": float(loss)})
        if self.is_main and self.run is not None:
            os.makedirs(LOG_DIR, exist_ok=True)
            with open(os.path.join(LOG_DIR, "history.json"), "w") as f:
                json.dump(self.run.history, f)
            self.run.finish()
        return float(loss)


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, loss


trainer = VLATrainer(TrackerConfig())
final = trainer.train(steps=6)
print("RESULT loss", round(final, 5))
