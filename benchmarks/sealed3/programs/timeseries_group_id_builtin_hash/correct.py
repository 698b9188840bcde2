# A time-series dataset encodes each group id with a stable hash (crc32), the same in every rank
# Source: https://github.com/sktime/pytorch-forecasting/issues/2293
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

GROUPS = ["store_aa", "store_bb", "store_cc", "store_dd"]


@dataclasses.dataclass
class Row:
    gid: str
    time: int
    target: float


def make_rows() -> list[Row]:
    return [Row(gid, t, float(i + 0.25 * t)) for i, gid in enumerate(GROUPS) for t in range(4)]


class TimeSeries:
    """Encodes the group column into embedding buckets, like a categorical encoder."""

    def __init__(self, rows: list[Row], n_buckets: int = 32):
        self.rows = rows
        self.n_buckets = n_buckets
        self._group_ids = sorted({r.gid for r in rows})

    def encode_group(self, gid: str) -> int:
        # Stable across interpreters (hash() of a str is salted per process by PYTHONHASHSEED).
        return zlib.crc32(gid.encode("utf-8")) % self.n_buckets

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        r = self.rows[i]
        return {"group": self.encode_group(r.gid), "time": np.float32(r.time), "target": np.float32(r.target)}


class GroupModel:
    def __init__(self, n_buckets: int, mesh):
        rng = np.random.default_rng(0)
        self.params = {"emb": jnp.asarray(rng.normal(size=n_buckets).astype(np.float32)),
                       "slope": jnp.float32(0.0)}
        self.sharding = NamedSharding(mesh, P("data"))
        self._step = jax.jit(self._sgd)

    @staticmethod
    def _sgd(params, group, time, target):
        def loss_fn(p):
            pred = p["emb"][group] + p["slope"] * time
            return jnp.mean((pred - target) ** 2)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss

    def fit(self, ds: TimeSeries, epochs: int = 60) -> float:
        local = [ds[i] for i in range(jax.process_index(), len(ds), jax.process_count())]
        cols = {k: np.asarray([item[k] for item in local]) for k in ("group", "time", "target")}
        arrays = {k: jax.make_array_from_process_local_data(self.sharding, v) for k, v in cols.items()}
        loss = None
        for _ in range(epochs):
            self.params, loss = self._step(self.params, arrays["group"], arrays["time"], arrays["target"])
        return float(loss)

    def predict(self, ds: TimeSeries, gid: str, time: int) -> float:
        emb = np.asarray(self.params["emb"])
        return float(emb[ds.encode_group(gid)] + float(self.params["slope"]) * time)


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    ds = TimeSeries(make_rows())
    model = GroupModel(ds.n_buckets, mesh)
    loss = model.fit(ds)
    print("RESULT", f"train_loss={loss:.5f}")
    for gid in GROUPS:
        print("RESULT", f"forecast[{gid}]={model.predict(ds, gid, time=4):.4f}")


if __name__ == "__main__":
    main()
