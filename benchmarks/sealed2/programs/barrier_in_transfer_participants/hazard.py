# A global barrier issued only by the hosts that take part in a point-to-point weight transfer
# Source: https://github.com/ray-project/ray/pull/61771
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


@dataclasses.dataclass
class Transfer:
    src_host: int
    dst_host: int
    tensor_name: str

    @property
    def participants(self) -> set[int]:
        return {self.src_host, self.dst_host}


class TpuTransport:
    """Ships replicated tensors to the rollout worker that lives on one host."""

    def __init__(self):
        self.received: dict[str, np.ndarray] = {}

    def send(self, transfer: Transfer, value: jax.Array) -> None:
        me = jax.process_index()
        if me in transfer.participants:
            if me == transfer.dst_host:
                self.received[transfer.tensor_name] = np.asarray(value.addressable_data(0)).copy()
            multihost_utils.sync_global_devices("tpu_jax_rdt_transfer")


@jax.jit
def train_step(w, x):
    grad = jax.grad(lambda w: jnp.mean((x @ w) ** 2))(w)
    return w - 0.05 * grad


transport = TpuTransport()
w = jax.device_put(jnp.full((4, 2), 0.3), REPL)
rng = np.random.default_rng(7 + jax.process_index())
for step in range(6):
    x = jax.make_array_from_process_local_data(DATA, rng.normal(size=(3, 4)).astype(np.float32))
    w = train_step(w, x)
    if step % 2 == 1:
        transport.send(Transfer(src_host=0, dst_host=0, tensor_name="policy/w"), w)

print("RESULT", round(float(jnp.sum(w)), 4))
