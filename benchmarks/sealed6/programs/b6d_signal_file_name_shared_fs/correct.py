# Tokenizer setup with a per-node signal file: only the random part of the name is broadcast and each
# node adds its own node rank, so on a shared file system every node has its own file
# Source: https://github.com/mosaicml/llm-foundry/issues/1848
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import json
import os
import random
import string
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

LOCAL_WORLD_SIZE = 1  # one process per node


def get_node_rank() -> int:
    return jax.process_index() // LOCAL_WORLD_SIZE


def get_local_rank() -> int:
    return jax.process_index() % LOCAL_WORLD_SIZE


def broadcast_object_list(objs: list, src: int = 0) -> None:
    raw = json.dumps(objs).encode()
    buf = np.zeros(256, np.uint8)
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    out = multihost_utils.broadcast_one_to_all(buf, is_source=jax.process_index() == src)
    objs[:] = json.loads(bytes(np.asarray(out)).rstrip(b"\0").decode())


def get_node_signal_file_name(rng: random.Random) -> str:
    random_string = "".join(rng.choices(string.ascii_letters + string.digits, k=6))
    node_rank = get_node_rank()
    suffix_list = [random_string]
    broadcast_object_list(suffix_list, src=0)
    return f"._signal_file_node{node_rank}_{suffix_list[0]}"


def write_signal_file(signal_file_name: str, dir_path: str) -> str:
    path = os.path.join(dir_path, signal_file_name)
    if get_local_rank() == 0:
        with open(path, "wb") as f:
            f.write(b"local_rank0_completed_tokenizer_setup")
    return path


def build_tokenizer(tokenizer_name: str, save_folder: str, rng: random.Random) -> dict:
    signal_file_path = os.path.join(save_folder, get_node_signal_file_name(rng))
    cache = os.path.join(save_folder, f"node{get_node_rank()}_hf_cache", tokenizer_name)
    if get_local_rank() == 0:
        os.makedirs(cache, exist_ok=True)
        vocab = {tok: i for i, tok in enumerate(["<pad>", "<eos>"] + list(string.ascii_lowercase))}
        with open(os.path.join(cache, "vocab.json"), "w") as f:
            json.dump(vocab, f)
        write_signal_file(os.path.basename(signal_file_path), save_folder)
    else:
        while not os.path.exists(signal_file_path):
            time.sleep(0.05)
    multihost_utils.sync_global_devices("tokenizer_setup")
    if get_local_rank() == 0:
        os.remove(signal_file_path)
    with open(os.path.join(cache, "vocab.json")) as f:
        return json.load(f)


def train(vocab: dict) -> float:
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    text = "the quick brown fox jumps over the lazy dog"
    ids = np.array([vocab.get(c, 0) for c in text.replace(" ", "")], np.int32)
    local = ids[:16].reshape(2, 8) + jax.process_index()
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local)
    emb = jnp.linspace(-1.0, 1.0, len(vocab) * 4).reshape(len(vocab), 4)
    loss = jax.jit(lambda e, b: jnp.mean(jnp.sum(e[b] ** 2, -1)))(emb, batch)
    return float(loss)


if __name__ == "__main__":
    save_folder = os.path.join(tempfile.gettempdir(), f"llmfoundry_run_{os.environ['JOB_ID']}")
    os.makedirs(save_folder, exist_ok=True)
    vocab = build_tokenizer("char-tokenizer", save_folder, random.Random(17))
    print("RESULT vocab", len(vocab))
    print("RESULT loss", round(train(vocab), 5))
