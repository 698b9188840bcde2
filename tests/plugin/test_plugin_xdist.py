"""pytest-xdist runs several multi-process tests side by side; parametrized ids reach the workers."""

import pytest
from plugin_helpers import make_module, run, traces

CONFTEST = '''
import pytest


@pytest.fixture
def offset():
    return 0.5
'''

PARAMETRIZED = '''
@pytest.mark.parametrize("scale", [2.0, -1.0])
@pytest.mark.mcjax(processes=2)
def test_parametrized(scale, offset, tmp_path, mcjax_process_index):
    x, rep = global_array([scale + offset])
    total = float(jax.jit(jnp.sum, out_shardings=rep)(x))
    (tmp_path / "mine").write_text(str(mcjax_process_index))
    record(f"param{scale}", total=total, tmp=str(tmp_path))
    assert total == 2 * (scale + offset)
'''


@pytest.mark.timeout(200)
def test_xdist_two_workers_run_parametrized_tests_side_by_side(inner: pytest.Pytester) -> None:
    inner.makeconftest(CONFTEST)
    make_module(inner, "test_param", PARAMETRIZED)
    result = run(inner, "-n", "2", "-v")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    # One test on each xdist worker.
    assert "[gw0]" in out and "[gw1]" in out
    for scale in (2.0, -1.0):
        assert f"PASSED test_param.py::test_parametrized[{scale}]" in out
        ps = traces(inner, f"param{scale}")
        assert [t["index"] for t in ps] == [0, 1]
        assert [t["total"] for t in ps] == [2 * (scale + 0.5)] * 2  # the parameter and conftest fixture arrived
        assert len({t["tmp"] for t in ps}) == 2  # each process has its own tmp_path
    # No shared state: each test had its own coordinator.
    a, b = traces(inner, "param2.0"), traces(inner, "param-1.0")
    assert a[0]["coordinator"] != b[0]["coordinator"]
