# WebDataset-style pipeline: shards are split by node, and with a single shard file one training
# process receives no shards at all, so its epoch loop ends before the first step
# Source: https://github.com/webdataset/webdataset/issues/188
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import io
import os
import tarfile
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATS, N_UTTERANCES, BATCH = 6, 48, 4
HPARAMS = {"samples_per_shard": 64, "num_workers": 1, "lr": 0.05}


def write_shards(shard_dir, samples_per_shard):
    """Prepare the utterances as tar shards, as the recipe's data-prep step does on each node."""
    rng = np.random.default_rng(1234)
    data = rng.normal(size=(N_UTTERANCES, FEATS)).astype(np.float32)
    labels = (data.sum(axis=1) > 0).astype(np.float32)
    paths = []
    for s, start in enumerate(range(0, N_UTTERANCES, samples_per_shard)):
        path = os.path.join(shard_dir, f"shard-{s:06d}.tar")
        with tarfile.open(path, "w") as tar:
            for i in range(start, min(start + samples_per_shard, N_UTTERANCES)):
                for ext, arr in (("feats.npy", data[i]), ("lang.npy", labels[i:i + 1])):
                    buf = io.BytesIO()
                    np.save(buf, arr)
                    info = tarfile.TarInfo(f"utt{i:05d}.{ext}")
                    info.size = buf.tell()
                    buf.seek(0)
                    tar.addfile(info, buf)
        paths.append(path)
    return paths


def split_by_node(urls):
    rank, world = jax.process_index(), jax.process_count()
    yield from urls[rank::world]


def split_by_worker(urls, worker=0, num_workers=1):
    yield from list(urls)[worker::num_workers]


def tarfile_samples(urls):
    for url in urls:
        with tarfile.open(url) as tar:
            sample = {}
            for member in tar.getmembers():
                key, ext = member.name.split(".", 1)
                sample[ext] = np.load(io.BytesIO(tar.extractfile(member).read()))
                if len(sample) == 2:
                    yield key, sample
                    sample = {}


def batched(samples, batch_size):
    feats, langs = [], []
    for _, s in samples:
        feats.append(s["feats.npy"])
        langs.append(s["lang.npy"][0])
        if len(feats) == batch_size:
            yield np.stack(feats), np.array(langs, np.float32)
            feats, langs = [], []


class WebLoader:
    def __init__(self, urls, batch_size, num_workers):
        self.urls, self.batch_size, self.num_workers = urls, batch_size, num_workers

    def __iter__(self):
        shards = split_by_worker(split_by_node(self.urls), 0, self.num_workers)
        return batched(tarfile_samples(shards), self.batch_size)


class LangIdBrain:
    def __init__(self, hparams):
        self.hparams = hparams
        mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
        self.data = NamedSharding(mesh, P("data"))
        self.w = jax.device_put(jnp.zeros((FEATS,), jnp.float32), NamedSharding(mesh, P()))
        self._step = jax.jit(self._train_step)

    def _train_step(self, w, x, y):
        def loss_fn(w):
            logits = x @ w
            return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
        loss, g = jax.value_and_grad(loss_fn)(w)
        return w - self.hparams["lr"] * g, loss

    def fit_epoch(self, loader):
        losses = []
        for feats, langs in loader:
            x = jax.make_array_from_process_local_data(self.data, feats)
            y = jax.make_array_from_process_local_data(self.data, langs)
            self.w, loss = self._step(self.w, x, y)
            losses.append(loss)
        multihost_utils.sync_global_devices("epoch_end")
        return float(losses[-1]) if losses else float("nan")


if __name__ == "__main__":
    shard_dir = tempfile.mkdtemp(prefix="wds_shards_")
    urls = write_shards(shard_dir, HPARAMS["samples_per_shard"])
    brain = LangIdBrain(HPARAMS)
    loader = WebLoader(urls, BATCH, HPARAMS["num_workers"])
    for epoch in range(2):
        loss = brain.fit_epoch(loader)
    w = multihost_utils.process_allgather(brain.w, tiled=True)
    print("RESULT", " ".join(f"{v:.4f}" for v in np.asarray(w)))
