"""Kernels written the way their users write them, for consan's tests and benchmarks."""
