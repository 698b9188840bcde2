# Model split across hosts (data replicated over them) with a dataset seed shared by every host
# Source: https://github.com/borisdayma/dalle-mini/commit/728a3c3ce8aff73098c7c377e71a5f3eef826dbb
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class TrainingArguments:
    mp_devices: int = 2
    seed_dataset: int | None = 2022
    batch_size_per_node: int = 8
    num_steps: int = 4
    learning_rate: float = 0.05


@dataclasses.dataclass
class Dataset:
    num_examples: int = 64
    seq_len: int = 12
    seed_dataset: int | None = None
    np_rng: np.random.Generator = dataclasses.field(init=False)

    def __post_init__(self):
        if self.seed_dataset is None:
            # create a random seed
            self.seed_dataset = random.randint(0, 2**32 - 1)
        self.np_rng = np.random.default_rng(self.seed_dataset)
        corpus = np.random.default_rng(7)  # the same encoded corpus on every host
        lengths = corpus.integers(3, self.seq_len + 1, size=self.num_examples)
        self.input_ids = corpus.integers(1, 100, size=(self.num_examples, self.seq_len)).astype(np.int32)
        self.attention_mask = (np.arange(self.seq_len)[None, :] < lengths[:, None]).astype(np.int32)

    def dataloader(self, batch_size: int):
        while True:
            order = self.np_rng.permutation(self.num_examples)
            for i in range(0, self.num_examples - batch_size + 1, batch_size):
                idx = order[i:i + batch_size]
                yield {"input_ids": self.input_ids[idx], "attention_mask": self.attention_mask[idx]}


def main() -> None:
    args = TrainingArguments()
    mesh = jax.make_mesh((jax.device_count() // args.mp_devices, args.mp_devices), ("dp", "mp"),
                         axis_types=(jax.sharding.AxisType.Auto,) * 2)
    batch_spec = NamedSharding(mesh, P("dp"))
    rng = np.random.default_rng(0)
    params = {"emb": jax.device_put(jnp.asarray(rng.normal(size=(100, 8)), jnp.float32), NamedSharding(mesh, P(None, "mp"))),
              "out": jax.device_put(jnp.asarray(rng.normal(size=(8, 1)), jnp.float32), NamedSharding(mesh, P("mp", None)))}
    # check arguments
    if args.mp_devices > jax.local_device_count():
        assert args.seed_dataset is not None, "Seed dataset must be provided when model is split over multiple hosts"
    dataset = Dataset(seed_dataset=args.seed_dataset)

    @jax.jit
    def train_step(params, batch):
        def loss_fn(p):
            h = jnp.sum(p["emb"][batch["input_ids"]] * batch["attention_mask"][..., None], axis=1)
            return jnp.mean((h @ p["out"]) ** 2) * 1e-2
        loss, grads = jax.value_and_grad(loss_fn)(params)
        new = jax.tree.map(lambda w, g: w - 0.05 * g, params, grads)
        return new, {"loss": loss, "num_tokens": jnp.sum(batch["attention_mask"])}

    metrics = None
    loader = dataset.dataloader(args.batch_size_per_node)
    for _ in range(args.num_steps):
        local = next(loader)  # model replicas span hosts: each host loads the whole replica batch
        batch = {k: jax.make_array_from_process_local_data(batch_spec, v) for k, v in local.items()}
        params, metrics = train_step(params, batch)
    print("RESULT loss", round(float(metrics["loss"]), 4))
    print("RESULT num_tokens", int(metrics["num_tokens"]))


if __name__ == "__main__":
    main()
