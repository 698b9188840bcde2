import pytest


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, with the directory where the inner test processes leave their traces."""
    monkeypatch.setenv("MCJAX_TEST_TRACES", str(pytester.path / "traces"))
    return pytester
