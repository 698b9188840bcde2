# pytester drives the pytest plugin's own tests (tests/plugin/); it must be enabled at the top level.
pytest_plugins = ["pytester"]
