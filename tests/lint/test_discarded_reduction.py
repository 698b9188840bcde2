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
