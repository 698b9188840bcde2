import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, NUM_LAYERS = 40, 16, 2
IMAGE_TOKEN_ID = 39
PATCH_DIM = 3 * 2 * 2 * 2  # in_channels * temporal_patch_size * patch_size**2
SPATIAL_MERGE = 4


class FSDPUnit:
    """One FSDP-wrapped module: every rank keeps a flat shard, unsharded on use."""

    def __init__(self, name, shapes, key):
        self.name, self.shapes = name, shapes
        full = [jax.random.normal(k, s) * 0.1 for k, s in zip(jax.random.split(key, len(shapes)), shapes.values())]
        flat = np.concatenate([np.asarray(p).ravel() for p in full]).astype(np.float32)
        world, rank = jax.process_count(), jax.process_index()
        self.numel = flat.size
        per = -(-flat.size // world)
        flat = np.pad(flat, (0, per * world - flat.size))
        self.local_shard = flat[rank * per:(rank + 1) * per]

    def unshard(self):
        flat = np.asarray(multihost_utils.process_allgather(self.local_shard)).reshape(-1)[:self.numel]
        out, off = {}, 0
        for k, s in self.shapes.items():
            n = int(np.prod(s))
            out[k] = jnp.asarray(flat[off:off + n].reshape(s))
            off += n
        return out

    def reduce_scatter_grad(self, grads, lr):
        flat = np.concatenate([np.asarray(grads[k]).ravel() for k in self.shapes])
        per = self.local_shard.size
        flat = np.pad(flat, (0, per * jax.process_count() - flat.size))
        mean = np.asarray(multihost_utils.process_allgather(flat)).mean(0)
        rank = jax.process_index()
        self.local_shard = self.local_shard - lr * mean[rank * per:(rank + 1) * per]


class Qwen2VLForConditionalGeneration:
    def __init__(self, key):
        ks = jax.random.split(key, NUM_LAYERS + 3)
        self.units = {"embed_tokens": FSDPUnit("embed_tokens", {"weight": (VOCAB, HIDDEN)}, ks[0]),
                      "visual": FSDPUnit("visual", {"patch_embed": (PATCH_DIM, HIDDEN), "merger": (HIDDEN, HIDDEN)}, ks[1])}
        for i in range(NUM_LAYERS):
            self.units[f"layers.{i}"] = FSDPUnit(f"layers.{i}", {"w": (HIDDEN, HIDDEN)}, ks[2 + i])
        self.units["lm_head"] = FSDPUnit("lm_head", {"weight": (HIDDEN, VOCAB)}, ks[-1])
        self.training = False

    def train(self):
        self.training = True


def visual_forward(p, pixel_values):
    h = jnp.tanh(pixel_values @ p["patch_embed"])
    return h.reshape(-1, SPATIAL_MERGE, HIDDEN).mean(1) @ p["merger"]


def _get_input_embeds(model, get, input_ids, pixel_values=None, image_grid_thw=None):
    inputs_embeds = get("embed_tokens")["weight"][input_ids]
    if pixel_values is not None:
        image_embeds = visual_forward(get("visual"), pixel_values)
        image_mask = (input_ids == IMAGE_TOKEN_ID)
        idx = jnp.cumsum(image_mask.ravel()) - 1
        scattered = image_embeds[jnp.clip(idx, 0, image_embeds.shape[0] - 1)].reshape(inputs_embeds.shape)
        inputs_embeds = jnp.where(image_mask[..., None], scattered, inputs_embeds)

    if model.training and pixel_values is None:
        pixel_values = jnp.zeros((16, PATCH_DIM), dtype=inputs_embeds.dtype)
        image_grid_thw = jnp.array([[1, 4, 4]])
        image_embeds = visual_forward(get("visual"), pixel_values)
        inputs_embeds += 0.0 * image_embeds.mean()
    return inputs_embeds


def forward(model, get, input_ids, pixel_values=None, image_grid_thw=None):
    h = _get_input_embeds(model, get, input_ids, pixel_values, image_grid_thw)
    for i in range(NUM_LAYERS):
        h = h + jnp.tanh(h @ get(f"layers.{i}")["w"])
    return h @ get("lm_head")["weight"]


def seq_loss(logits, input_ids):
    logp = jax.nn.log_softmax(logits[:, :-1], -1)
    return -jnp.take_along_axis(logp, input_ids[:, 1:, None], -1).mean()


def load_rl_batch(rank):
    """geo3k (image) prompts mixed with gsm8k (text-only) prompts; rank r gets its own micro-batch."""
    rng = np.random.default_rng(7 + rank)
    input_ids = rng.integers(1, IMAGE_TOKEN_ID, size=(2, 12))
    if rank == 0:
        input_ids[:, 1:3] = IMAGE_TOKEN_ID
        pixel_values = rng.normal(size=(2 * 2 * SPATIAL_MERGE, PATCH_DIM)).astype(np.float32)
        image_grid_thw = np.array([[1, 2, 4], [1, 2, 4]])
        return {"input_ids": input_ids, "pixel_values": pixel_values, "image_grid_thw": image_grid_thw}
    return {"input_ids": input_ids, "pixel_values": None, "image_grid_thw": None}


class DataParallelPPOActor:
    def __init__(self, actor_module, lr=0.05):
        self.actor_module, self.lr = actor_module, lr

    def update_policy(self, batch):
        self.actor_module.train()
        used = {}

        def unshard(name):
            if name not in used:
                used[name] = self.actor_module.units[name].unshard()
            return used[name]

        args = (batch["input_ids"], batch["pixel_values"], batch["image_grid_thw"])
        logits = forward(self.actor_module, unshard, *args)
        loss = seq_loss(logits, batch["input_ids"])
        grads = jax.grad(lambda p: seq_loss(forward(self.actor_module, p.__getitem__, *args),
                                            batch["input_ids"]))(used)
        for name in reversed(list(used)):
            self.actor_module.units[name].reduce_scatter_grad(grads[name], self.lr)
        return float(loss)


def main():
    rank = jax.process_index()
    actor = DataParallelPPOActor(Qwen2VLForConditionalGeneration(jax.random.PRNGKey(0)))
    batch = load_rl_batch(rank)
    losses = [actor.update_policy(batch) for _ in range(2)]
    pg_loss = np.asarray(multihost_utils.process_allgather(np.float32(losses[-1])))
    shards = {n: float(np.asarray(multihost_utils.process_allgather(u.local_shard)).sum())
              for n, u in actor.actor_module.units.items()}
    print("RESULT actor/pg_loss", np.round(pg_loss, 4).tolist())
    print("RESULT param_checksums", {k: round(v, 4) for k, v in shards.items()})


if __name__ == "__main__":
    main()
