# prepare_data runs on rank 0 only while the other ranks wait in a barrier whose timeout is shorter than the preparation
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19266
# Written for the mcjax sealed4 evaluation (not copied): a port of a PyTorch Lightning (DDP) data-preparation timeout
# to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import datetime
import hashlib
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax._src.distributed import global_state
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

DATA_DIR = os.path.join(tempfile.gettempdir(), "mcjax_b4c_prepare", os.environ.get("JOB_ID", "local"))


@dataclasses.dataclass
class DDPStrategy:
    timeout: datetime.timedelta = datetime.timedelta(seconds=1)

    @property
    def local_rank(self) -> int:
        return jax.process_index()

    def barrier(self, name: str) -> None:
        global_state.client.wait_at_barrier(f"b4c_{name}", int(self.timeout.total_seconds() * 1000))


class TokenizedDataModule:
    def __init__(self, data_dir: str, num_docs: int = 12):
        self.data_dir, self.num_docs = data_dir, num_docs

    def prepare_data(self) -> None:
        """Download and tokenize once; later stages read the cache."""
        os.makedirs(self.data_dir, exist_ok=True)
        for doc in range(self.num_docs):
            digest = f"doc-{doc}".encode()
            for _ in range(250_000):  # the slow tokenizer pass over a large corpus
                digest = hashlib.sha256(digest).digest()
            tokens = np.frombuffer(digest * 4, np.uint8)[:64].astype(np.int32) % 50
            np.save(os.path.join(self.data_dir, f"doc_{doc:03d}.npy"), tokens)

    def setup(self) -> np.ndarray:
        docs = [np.load(os.path.join(self.data_dir, f"doc_{i:03d}.npy")) for i in range(self.num_docs)]
        return np.stack(docs[jax.process_index()::jax.process_count()])


class Trainer:
    def __init__(self, strategy: DDPStrategy):
        self.strategy = strategy
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))

    def _prepare_data(self, datamodule: TokenizedDataModule) -> None:
        if self.strategy.local_rank == 0:
            datamodule.prepare_data()
        self.strategy.barrier("prepare_data")

    def fit(self, datamodule: TokenizedDataModule) -> float:
        self._prepare_data(datamodule)
        local = datamodule.setup().astype(np.float32)
        batch = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("data")), local)
        return float(jax.jit(lambda b: jnp.mean(b) + jnp.std(b))(batch))


# raise the collective timeout above the time the one-process preparation takes
trainer = Trainer(strategy=DDPStrategy(timeout=datetime.timedelta(seconds=120)))
stat = trainer.fit(TokenizedDataModule(DATA_DIR))
print("RESULT token_stat", round(stat, 4))
