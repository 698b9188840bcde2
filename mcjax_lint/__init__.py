"""mcjax-lint: static checks for multi-controller JAX programs."""

__version__ = "0.1.0"
