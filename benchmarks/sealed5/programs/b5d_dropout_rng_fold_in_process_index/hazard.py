# Sharded train step that folds jax.process_index() into the dropout rng ("use a different rng per node")
# Source: https://github.com/borisdayma/dalle-mini/commit/0952927a241297ea6e4e242e49cb45d275f43eb1
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("batch",))
BATCH = NamedSharding(MESH, P("batch"))
REPL = NamedSharding(MESH, P())


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class TrainState:
    step: jax.Array
    params: dict
    dropout_rng: jax.Array

    def replace(self, **kw) -> "TrainState":
        return dataclasses.replace(self, **kw)


@dataclasses.dataclass
class TrainingArguments:
    learning_rate: float = 0.05
    dropout_rate: float = 0.3
    num_steps: int = 6


def make_train_step(args: TrainingArguments):
    def loss_fn(params, batch, dropout_rng):
        h = jnp.tanh(batch["x"] @ params["w1"])
        keep = jax.random.bernoulli(dropout_rng, 1.0 - args.dropout_rate, h.shape)
        h = jnp.where(keep, h / (1.0 - args.dropout_rate), 0.0)
        return jnp.mean((h @ params["w2"] - batch["y"]) ** 2)

    def train_step(state: TrainState, batch: dict):
        # create a new rng
        dropout_rng, new_dropout_rng = jax.random.split(state.dropout_rng)
        # use a different rng per node
        dropout_rng = jax.random.fold_in(dropout_rng, jax.process_index())
        loss, grads = jax.value_and_grad(loss_fn)(state.params, batch, dropout_rng)
        params = jax.tree.map(lambda p, g: p - args.learning_rate * g, state.params, grads)
        # probe of the mask on a replicated tensor, logged with the metrics
        mask_frac = jnp.mean(jax.random.bernoulli(dropout_rng, 1.0 - args.dropout_rate, (64,)))
        return state.replace(step=state.step + 1, params=params, dropout_rng=new_dropout_rng), \
            {"loss": loss, "keep_frac": mask_frac}

    return jax.jit(train_step, donate_argnums=(0,))


def main() -> None:
    args = TrainingArguments()
    rng = np.random.default_rng(0)
    params = {"w1": jnp.asarray(rng.normal(size=(4, 16)) * 0.5, jnp.float32),
              "w2": jnp.asarray(rng.normal(size=(16, 1)) * 0.5, jnp.float32)}
    state = jax.device_put(TrainState(jnp.zeros((), jnp.int32), params, jax.random.PRNGKey(42)), REPL)
    p_train_step = make_train_step(args)
    local = np.random.default_rng(10 + jax.process_index())  # each host reads its own examples
    metrics = None
    for _ in range(args.num_steps):
        x = local.normal(size=(8, 4)).astype(np.float32)
        batch = {"x": jax.make_array_from_process_local_data(BATCH, x),
                 "y": jax.make_array_from_process_local_data(BATCH, x.sum(1, keepdims=True))}
        state, metrics = p_train_step(state, batch)
    print("RESULT loss", round(float(metrics["loss"]), 5))
    print("RESULT keep_frac", round(float(metrics["keep_frac"]), 5))
    print("RESULT rng", np.asarray(jax.random.key_data(state.dropout_rng)).tolist())
    print("RESULT w1_sum", round(float(jnp.sum(state.params["w1"])), 5))


if __name__ == "__main__":
    main()
