# A distributed test module in the style of torch.testing._internal: every process builds the
# parametrized test instances of the suite and runs them in order; each test performs
# cross-process collectives and compares against the expected result.
import os
import traceback

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def parametrize(arg_name, arg_values):
    def decorator(fn):
        fn.parametrize_args = (arg_name, arg_values)
        return fn
    return decorator


def instantiate_parametrized_tests(cls):
    tests = []
    for attr in sorted(vars(cls)):
        fn = getattr(cls, attr)
        if not attr.startswith("test_"):
            continue
        if hasattr(fn, "parametrize_args"):
            arg_name, values = fn.parametrize_args
            for i, value in enumerate(values):
                tests.append((f"{attr}_{i}", fn, {arg_name: value}))
        else:
            tests.append((attr, fn, {}))
    return tests


class MultiProcessTestCase:
    def __init__(self):
        self.rank = jax.process_index()
        self.world_size = jax.process_count()

    def assertEqual(self, actual, expected, msg=""):
        if not np.array_equal(np.asarray(actual), np.asarray(expected)):
            raise AssertionError(f"{msg}: {actual!r} != {expected!r}")


class TestCollectivesGloo(MultiProcessTestCase):
    @parametrize("dtype", {"float32", "float16", "int32", "int16", "int8", "uint8", "uint16", "uint32"})
    def test_all_gather_dtype(self, dtype):
        local = np.full((4,), self.rank + 1).astype(dtype)
        gathered = np.asarray(multihost_utils.process_allgather(local))
        expected = np.stack([np.full((4,), r + 1).astype(dtype) for r in range(self.world_size)])
        self.assertEqual(gathered, expected, f"all_gather {dtype}")

    @parametrize("size", [1, 7, 64])
    def test_broadcast_size(self, size):
        local = np.arange(size, dtype=np.float32) * (self.rank + 1)
        out = np.asarray(multihost_utils.broadcast_one_to_all(local))
        self.assertEqual(out, np.arange(size, dtype=np.float32), f"broadcast size={size}")

    def test_barrier(self):
        multihost_utils.sync_global_devices("test_barrier")


def run_tests():
    suite = TestCollectivesGloo()
    results = {}
    for name, fn, kwargs in instantiate_parametrized_tests(TestCollectivesGloo):
        try:
            fn(suite, **kwargs)
            results[name] = "ok"
        except AssertionError:
            traceback.print_exc()
            results[name] = "FAIL"
    return results


if __name__ == "__main__":
    results = run_tests()
    print("RESULT tests_run", len(results))
    print("RESULT failures", sorted(k for k, v in results.items() if v != "ok"))
