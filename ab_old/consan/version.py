"""consan's version: one place, importable without numpy or CuPy."""

__version__ = "0.1.0"
