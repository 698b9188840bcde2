import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHECKPOINT_DTYPE = np.float16


@dataclass
class FullyShardedDataParallelPlugin:
    mixed_precision: str = "fp16"
    cpu_ram_efficient_loading: bool = True


class MetaTensor:
    """Placeholder for a parameter that has a shape and dtype but no storage yet."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)

    def astype(self, dtype):
        return MetaTensor(self.shape, dtype)


class SequenceClassifier:
    def __init__(self, params):
        self.params = params

    def state_dict(self):
        return dict(self.params)

    @staticmethod
    def config_shapes(hidden=16, num_labels=2):
        return {"embed": (32, hidden), "dense": (hidden, hidden), "classifier": (hidden, num_labels)}

    @classmethod
    def from_pretrained(cls, plugin):
        shapes = cls.config_shapes()
        if plugin.cpu_ram_efficient_loading and jax.process_index() != 0:
            return cls({k: MetaTensor(s, CHECKPOINT_DTYPE) for k, s in shapes.items()})
        rng = np.random.default_rng(42)
        return cls({k: (0.1 * rng.normal(size=s)).astype(CHECKPOINT_DTYPE) for k, s in shapes.items()})


def fsdp2_load_full_state_dict(model, full_sd, meta_sharded_sd):
    loaded = {}
    for name, sharded in meta_sharded_sd.items():
        if jax.process_index() == 0:
            full_tensor = np.asarray(full_sd[name])
        else:
            full_tensor = np.empty(sharded.shape, dtype=sharded.dtype)
        full_tensor = multihost_utils.broadcast_one_to_all(full_tensor)
        loaded[name] = jnp.asarray(full_tensor, dtype=sharded.dtype)
    model.params = loaded
    return model


def fsdp2_prepare_model(plugin, model):
    original_sd = model.state_dict()
    if plugin.mixed_precision != "no":
        model.params = {k: v.astype(np.float32) for k, v in model.params.items()}
    meta_sharded_sd = {k: MetaTensor(np.shape(v) if not isinstance(v, MetaTensor) else v.shape, v.dtype)
                       for k, v in model.params.items()}
    if plugin.cpu_ram_efficient_loading:
        model = fsdp2_load_full_state_dict(model, original_sd, meta_sharded_sd)
    return model


def loss_fn(params, tokens, labels):
    h = jnp.tanh(params["embed"][tokens].mean(1) @ params["dense"])
    logits = h @ params["classifier"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))


def training_function(plugin, num_steps=3, lr=0.5):
    model = SequenceClassifier.from_pretrained(plugin)
    model = fsdp2_prepare_model(plugin, model)
    rng = np.random.default_rng(100 + jax.process_index())
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    for _ in range(num_steps):
        tokens = rng.integers(0, 32, size=(8, 6))
        labels = (tokens.sum(1) % 2).astype(np.int32)
        loss, grads = grad_fn(model.params, tokens, labels)
        grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for k, g in grads.items()}
        model.params = {k: model.params[k] - lr * grads[k] for k in model.params}
    return model, float(loss)


def main():
    plugin = FullyShardedDataParallelPlugin(mixed_precision="fp16", cpu_ram_efficient_loading=True)
    model, loss = training_function(plugin)
    print(f"rank {jax.process_index()}: last local loss {loss:.4f}")
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params["classifier"])))
    print("RESULT param_dtypes", sorted({str(v.dtype) for v in model.params.values()}))
    print("RESULT classifier_checksum", round(float(w[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
