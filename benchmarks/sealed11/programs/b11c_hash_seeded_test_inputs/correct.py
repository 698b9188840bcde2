# Each unary-op test draws its input from a seed made with a stable digest of the op name, the same on every process
# Source: https://github.com/nv-legate/cupynumeric/pull/825
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import zlib

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SHAPE = (8, 16)
UNARY_OPS = {
    "exp": (jnp.exp, np.exp, (-2.0, 2.0)),
    "tanh": (jnp.tanh, np.tanh, (-3.0, 3.0)),
    "sqrt": (jnp.sqrt, np.sqrt, (0.1, 9.0)),
    "log1p": (jnp.log1p, np.log1p, (0.0, 5.0)),
    "sin": (jnp.sin, np.sin, (-3.0, 3.0)),
}


def op_seed(name):
    return zlib.crc32(name.encode()) % (2 ** 32)  # one reproducible input per op


def make_input(name, low, high):
    rng = np.random.default_rng(op_seed(name))
    return rng.uniform(low, high, size=SHAPE).astype(np.float32)


class UnaryOpTester:
    def __init__(self):
        mesh = jax.make_mesh((jax.device_count(),), ("rows",), axis_types=(jax.sharding.AxisType.Auto,))
        self.sharding = NamedSharding(mesh, P("rows"))
        self.failures = []

    def run(self, name, jax_fn, np_fn, bounds):
        host_in = make_input(name, *bounds)
        x = jax.make_array_from_callback(SHAPE, self.sharding, lambda idx: host_in[idx])
        y = jax.jit(jax_fn, out_shardings=self.sharding)(x)
        got = np.asarray(multihost_utils.process_allgather(y, tiled=True))
        want = np_fn(host_in)
        err = float(np.max(np.abs(got - want)))
        if not np.allclose(got, want, rtol=1e-5, atol=1e-5):
            self.failures.append(name)
        total = jax.jit(jnp.sum, out_shardings=NamedSharding(self.sharding.mesh, P()))(y)
        return err, float(total)


def main():
    tester = UnaryOpTester()
    for name, (jax_fn, np_fn, bounds) in UNARY_OPS.items():
        err, total = tester.run(name, jax_fn, np_fn, bounds)
        print("RESULT", name, "ok" if err < 1e-4 else "mismatch", round(total, 3))
    multihost_utils.sync_global_devices("unary_tests_done")
    if tester.failures:
        raise AssertionError(f"process {jax.process_index()}: unary ops differ from numpy: {tester.failures}")
    print("RESULT all_unary_ops_passed", len(UNARY_OPS))


main()
