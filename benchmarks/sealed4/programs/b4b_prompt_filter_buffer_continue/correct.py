# RLHF trainer with an accuracy prompt filter: each rank filters its own replay buffer, and the "enough
# samples to update" check uses the smallest buffer over all ranks, so every rank updates together.
# Source: https://github.com/OpenRLHF/OpenRLHF/issues/717
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
DP = NamedSharding(MESH, P("dp"))
REPLICATED = NamedSharding(MESH, P())
N_SAMPLES_PER_PROMPT = 4
PROMPTS_PER_BATCH = 2
FEATURES = 4


@dataclasses.dataclass
class Args:
    prompt_filter: bool = True
    num_episodes: int = 6


@dataclasses.dataclass
class Experience:
    prompt_id: int
    features: np.ndarray
    reward: float


class PromptLoader:
    """Each data-parallel rank iterates over its own shard of the prompt set."""

    def __init__(self, num_prompts: int):
        self.ids = list(range(jax.process_index(), num_prompts, jax.process_count()))

    def __iter__(self):
        for i in range(0, len(self.ids), PROMPTS_PER_BATCH):
            yield self.ids[i:i + PROMPTS_PER_BATCH]


class ExperienceMaker:
    def make_experience_list(self, prompt_ids):
        out = []
        for pid in prompt_ids:
            rng = np.random.default_rng(pid)
            p_correct = [0.0, 0.5, 1.0, 0.3, 0.6, 0.0][pid % 6]   # some prompts are always/never solved
            for _ in range(N_SAMPLES_PER_PROMPT):
                out.append(Experience(pid, rng.normal(size=FEATURES).astype(np.float32),
                                      float(rng.random() < p_correct)))
        return out


class ReplayBuffer:
    def __init__(self):
        self.items: list[Experience] = []

    def append(self, exp: Experience):
        self.items.append(exp)

    def filter_items(self):
        # drop prompts whose samples are all correct or all wrong (no learning signal)
        by_prompt = {}
        for exp in self.items:
            by_prompt.setdefault(exp.prompt_id, []).append(exp.reward)
        keep = {pid for pid, r in by_prompt.items() if 0.0 < np.mean(r) < 1.0}
        self.items = [e for e in self.items if e.prompt_id in keep]

    def __len__(self):
        return len(self.items)


@jax.jit
def ppo_update(w, feats, rewards):
    def loss_fn(w):
        adv = rewards - jnp.mean(rewards)                    # global baseline: cross-rank reduction
        return -jnp.mean(adv * jnp.tanh(feats @ w))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.5 * g, loss


class PPOTrainer:
    def __init__(self, args: Args):
        self.args = args
        self.prompts_dataloader = PromptLoader(num_prompts=40)
        self.experience_maker = ExperienceMaker()
        self.replay_buffer = ReplayBuffer()
        self.w = jax.device_put(jnp.zeros((FEATURES,), jnp.float32), REPLICATED)
        self.losses = []

    def ppo_train(self, n: int):
        items = self.replay_buffer.items[:n]
        feats = jax.make_array_from_process_local_data(DP, np.stack([e.features for e in items]))
        rewards = jax.make_array_from_process_local_data(DP, np.array([e.reward for e in items], np.float32))
        self.w, loss = ppo_update(self.w, feats, rewards)
        self.losses.append(round(float(loss), 5))

    def fit(self):
        for _ in range(self.args.num_episodes):
            for rand_prompts in self.prompts_dataloader:
                for experience in self.experience_maker.make_experience_list(rand_prompts):
                    self.replay_buffer.append(experience)
                if self.args.prompt_filter:
                    self.replay_buffer.filter_items()
                    sizes = multihost_utils.process_allgather(np.int32(len(self.replay_buffer)))
                    if int(np.min(sizes)) < N_SAMPLES_PER_PROMPT * len(rand_prompts):
                        continue
                self.ppo_train(N_SAMPLES_PER_PROMPT * PROMPTS_PER_BATCH)
                self.replay_buffer.items.clear()
        return self.losses


trainer = PPOTrainer(Args())
losses = trainer.fit()
print("RESULT updates", len(losses))
print("RESULT losses", losses)
