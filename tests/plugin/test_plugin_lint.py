"""--mcjax-lint and the mcjax_lint fixture run the real linter on the tests and the package."""

import pytest
from plugin_helpers import run

# A package with a rank-0 branch around a cross-process jit (MCJ101), and a clean one.
HAZARD = '''\
import jax
import jax.numpy as jnp


@jax.jit
def global_mean(x):
    return jnp.mean(x)


def log_loss(x):
    if jax.process_index() == 0:
        print(global_mean(x))  # the-hazard
'''

CLEAN_TEST = '''\
def test_nothing_multi_host():
    assert 1 + 1 == 2
'''

FIXTURE_TEST = '''\
def test_package_is_clean(mcjax_lint):
    assert not mcjax_lint("mypkg")


def test_this_file_is_clean(mcjax_lint):
    assert not mcjax_lint()
'''


@pytest.mark.timeout(120)
def test_option_adds_one_lint_item_per_test_file_and_package(pytester: pytest.Pytester) -> None:
    pkg = pytester.mkpydir("mypkg")
    (pkg / "train.py").write_text(HAZARD)
    pytester.makepyfile(test_clean=CLEAN_TEST)
    result = run(pytester, "--mcjax-lint", "-v")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "test_clean.py::mcjax-lint PASSED" in out
    assert "mypkg::mcjax-lint FAILED" in out
    assert "mypkg/train.py:11:5: MCJ101" in out  # the `if` over the jit, with its rule


@pytest.mark.timeout(120)
def test_fixture_returns_the_findings(pytester: pytest.Pytester) -> None:
    pkg = pytester.mkpydir("mypkg")
    (pkg / "train.py").write_text(HAZARD)
    pytester.makepyfile(test_lint_fixture=FIXTURE_TEST)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "mcjax-lint: 1 finding(s)" in out and "mypkg/train.py:11:5: MCJ101" in out
    assert "PASSED test_lint_fixture.py::test_this_file_is_clean" in out
