"""The start-up hook directory `mcjax-guard` puts first on PYTHONPATH (see runtime_guard.workers).

It holds only `sitecustomize.py`; nothing imports this package.
"""
