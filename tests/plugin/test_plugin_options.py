"""Command-line overrides, and clear errors for misuse (no processes are started for those)."""

import re
import time

import pytest
from plugin_helpers import make_module, run, traces

OVERRIDDEN = '''
@pytest.mark.mcjax(processes=2, mode="strict")
def test_sees_the_overrides(mcjax_process_index, mcjax_process_count):
    from runtime_guard.guard import current

    x, rep = global_array([1.0])
    total = float(jax.jit(jnp.sum, out_shardings=rep)(x))
    record("override", total=total, mode=current().settings.mode)
    assert total == mcjax_process_count
'''

LONG_MARK = '''
@pytest.mark.mcjax(processes=2, timeout=600)
def test_one_process_sleeps(mcjax_process_index):
    x, rep = global_array([1.0])
    jax.jit(jnp.sum, out_shardings=rep)(x)
    if mcjax_process_index == 1:
        time.sleep(600)
    jax.jit(jnp.sum, out_shardings=rep)(x * 2)
'''

MISUSE = '''
import pytest


@pytest.mark.mcjax(procs=2)
def test_unknown_argument():
    pass


@pytest.mark.mcjax(processes=0)
def test_zero_processes():
    pass


def test_fixture_outside_the_mark(mcjax_process_index):
    pass
'''


@pytest.mark.timeout(200)
def test_command_line_overrides_processes_and_mode(inner: pytest.Pytester) -> None:
    make_module(inner, "test_over", OVERRIDDEN)
    result = run(inner, "--mcjax-processes", "3", "--mcjax-mode", "fast")
    result.assert_outcomes(passed=1)
    seen = traces(inner, "override")
    assert [t["index"] for t in seen] == [0, 1, 2]
    assert {t["count"] for t in seen} == {3} and {t["total"] for t in seen} == {3.0}
    assert {t["mode"] for t in seen} == {"fast"}


@pytest.mark.timeout(200)
def test_command_line_timeout_overrides_the_marks(inner: pytest.Pytester) -> None:
    make_module(inner, "test_long", LONG_MARK)
    start = time.monotonic()
    result = run(inner, "--mcjax-timeout", "10")
    result.assert_outcomes(failed=1)
    durations = re.findall(r"in (\d+\.\d+)s", result.stdout.str())
    assert durations and float(durations[-1]) < 10 + 15  # not the mark's 600 s
    assert time.monotonic() - start < 10 + 40


@pytest.mark.timeout(120)
def test_misuse_gets_a_clear_error(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_misuse=MISUSE)
    result = run(inner)
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    assert "unknown @pytest.mark.mcjax argument(s) procs (known: processes, devices_per_process, mode, timeout)" in out
    assert "processes must be between 1 and 64, not 0" in out
    assert "the mcjax_process_index fixture is only available in tests marked @pytest.mark.mcjax" in out
