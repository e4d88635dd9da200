"""The package version, in a module of its own (the kernel cache keys on it)."""

__version__ = "0.1.0"
