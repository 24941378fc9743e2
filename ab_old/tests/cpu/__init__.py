"""Tests that run anywhere: no GPU needed (NVRTC, nvJitLink and ptxas work without one)."""
