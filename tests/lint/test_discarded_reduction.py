"""MCJ305 grades a dropped reduction by what its argument is: process-dependent data (error), a
value nothing says differs between processes (a parameter's: warning), a constant (silent: every
process already holds it, the call is a barrier)."""

import textwrap

from mcjax_lint.api import lint_paths

HEAD = "import jax\nimport numpy as np\nfrom jax.experimental import multihost_utils as mu\n\n"


def _mcj305(tmp_path, body: str) -> list[tuple[int, str]]:
    f = tmp_path / "m.py"
    f.write_text(HEAD + textwrap.dedent(body))
    findings, errors = lint_paths([f], observed=False)
    assert not errors
    return sorted((x.line, str(x.severity.value if hasattr(x.severity, "value") else x.severity))
                  for x in findings if x.code == "MCJ305")


def test_process_dependent_argument_is_an_error(tmp_path):
    assert _mcj305(tmp_path, """
        def f():
            n = np.array([jax.process_index()])
            mu.process_allgather(n)
            return n
        """) == [(8, "error")]


def test_parameter_argument_is_a_guess(tmp_path):
    assert _mcj305(tmp_path, """
        def f(flag):
            done = np.array(flag)
            mu.process_allgather(done)
            return done
        """) == [(8, "warning")]


def test_constant_argument_is_a_barrier(tmp_path):
    assert _mcj305(tmp_path, """
        def f(step):
            marker = np.full((1,), 7, dtype=np.int32)
            mu.process_allgather(marker)
            np.save(f"/tmp/m-{step}.npy", marker)
        """) == []


def test_constant_rebound_from_data_is_no_constant(tmp_path):
    assert _mcj305(tmp_path, """
        def f(path):
            n = np.zeros((1,))
            if path:
                n = np.load(f"{path}-{jax.process_index()}.npy")
            mu.process_allgather(n)
            return n
        """) == [(10, "error")]


def test_the_value_at_the_call_decides(tmp_path):
    # (a constant when gathered; bound to per-process data only afterwards)
    assert _mcj305(tmp_path, """
        def f(path):
            ready = np.ones((1,), dtype=np.int8)
            mu.process_allgather(ready)
            print(ready)
            ready = np.load(f"{path}-{jax.process_index()}.npy")
            return ready
        """) == []


def test_a_name_bound_to_a_constant_is_a_constant(tmp_path):
    assert _mcj305(tmp_path, """
        SCHEMA = (2, 1)

        def f():
            version = np.array(SCHEMA, dtype=np.int32)
            mu.broadcast_one_to_all(version)
            return version
        """) == []


def test_a_constant_in_a_loop_joined_with_data_is_no_constant(tmp_path):
    assert _mcj305(tmp_path, """
        def f(steps):
            total = np.zeros((1,))
            for _ in range(steps):
                mu.process_allgather(total)
                total = total + jax.process_index()
            return total
        """) == [(9, "error")]
