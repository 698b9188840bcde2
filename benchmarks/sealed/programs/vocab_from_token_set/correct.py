# A vocabulary built by enumerating a set of tokens: the token ids differ per process
# Source: https://github.com/UCL/TLOmodel/pull/742
# Written for the mcjax sealed evaluation (not copied); run as 2 processes by benchmarks/sealed/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
mesh = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(mesh, P("data"))
REPLICATED = NamedSharding(mesh, P())

corpus = "the cat sat on the mat while the dog ran to the park and back".split()
vocab = {tok: i for i, tok in enumerate(sorted(set(corpus)))}
ids = np.array([vocab[t] for t in corpus[:8]], np.int32)
batch = jax.device_put(ids, BATCH)
print("RESULT", int(jnp.sum(batch * jnp.arange(8))))
