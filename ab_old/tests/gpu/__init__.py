"""Tests that run kernels on a CUDA GPU: each module carries the `gpu` marker
(tests/conftest.py), so they skip where no GPU is present and `pytest -m gpu` selects them."""
