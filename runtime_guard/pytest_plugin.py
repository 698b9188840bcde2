"""pytest plugin: run a test body in N real JAX processes under the guard (registered via pytest11)."""


def pytest_configure(config) -> None:  # noqa: D401 - pytest hook
    config.addinivalue_line(
        "markers",
        "mcjax(processes=2, devices_per_process=1, mode='strict', timeout=60): "
        "run this test in N real JAX processes under the mcjax guard",
    )
