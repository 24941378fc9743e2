"""What a test may need, said by a marker, and the one place that decides whether it is there.

A test module or function carries a marker from `NEEDS`; where the marker's condition does
not hold, its tests are skipped with the marker's reason. `pytest -m gpu` selects the GPU
suite (tests/gpu/), whose modules all carry `pytestmark = pytest.mark.gpu`.
"""

from __future__ import annotations

import functools
import importlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def gpu() -> bool:
    """Whether a CUDA GPU is present: the one reason the GPU tests skip.

    Only CUDA's own "no driver / no device" answer counts as absent. Where a GPU is present,
    consan is imported here unguarded, so a broken consan fails the suite (at collection)
    instead of skipping it.
    """
    import cupy  # a dependency of consan: missing is an error, not a skip

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:  # no driver, no device
        return False
    if count > 0:  # (`import consan` alone loads none of it: its names are lazy)
        for name in CONSAN_MODULES:  # an ImportError must surface on a GPU machine
            importlib.import_module(name)
    return count > 0


# What the GPU suite runs through: each is imported, unguarded, where a GPU is present.
CONSAN_MODULES = ("consan", "consan.runtime", "consan.session", "consan.frontends",
                  "consan.cupy_hook", "consan.triton_hook", "consan.run", "consan.cli")


def host_compiler() -> bool:
    """Whether g++ or c++ is on PATH: tests/checker_host.py builds the checker with it."""
    return shutil.which("g++") is not None or shutil.which("c++") is not None


def no_gpu() -> bool:
    """Whether consan sees no usable GPU: the path these tests check (consan's own view)."""
    import consan

    return not consan.gpu_available()


# marker -> (the condition its tests need, the skip reason where it fails, the marker's help)
NEEDS: dict[str, tuple[Callable[[], bool], str, str]] = {
    "gpu": (gpu, "needs a CUDA GPU", "needs a CUDA GPU (skipped where none is present)"),
    "needs_host_compiler": (host_compiler, "needs a host C++ compiler",
                            "builds the device checker for the host (skipped without g++)"),
    "no_gpu": (no_gpu, "checks the no-GPU path (a GPU is present)",
               "checks behaviour without a GPU (skipped where consan sees one)"),
}


def pytest_configure(config: pytest.Config) -> None:
    for name, (_, _, help_text) in NEEDS.items():
        config.addinivalue_line("markers", f"{name}: {help_text}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark skipped every test whose needs are not met (each condition asked at most once).
    The GPU tests share one group: under `-n auto --dist loadgroup` (the README's command)
    one worker runs them all in turn, as they share the one GPU, while the CPU tests spread
    over the others."""
    met = functools.cache(lambda name: NEEDS[name][0]())
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(pytest.mark.xdist_group("gpu"))
        for name, (_, reason, _) in NEEDS.items():
            if item.get_closest_marker(name) is not None and not met(name):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty consan cache for one test (CONSAN_CACHE = tmp_path: its PTX and linked
    modules) whose checker objects are the shared ones (`_shared_checker`)."""
    monkeypatch.setenv("CONSAN_CACHE", str(_shared_checker(tmp_path)))
    return tmp_path


@pytest.fixture(scope="module")
def fresh_module_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same for a module's tests together (each sets CONSAN_CACHE to it itself)."""
    return _shared_checker(tmp_path_factory.mktemp("consan_cache"))


def _shared_checker(path: Path) -> Path:
    """`path`, an empty consan cache, given the shared checker objects: a checker build costs
    10-30 s of NVRTC, and an empty folder made each test that uses one pay it again on each
    xdist worker."""
    from consan import toolchain

    shared = toolchain.cache_dir() / "checker"
    shared.mkdir(parents=True, exist_ok=True)
    (path / "checker").symlink_to(shared, target_is_directory=True)
    return path


@pytest.fixture
def clean_hook():
    """The CuPy front end uninstalled around a test: `frontends.sanitizing` installs it for
    the rest of the process, as `consan run` wants, which a later test of the same worker
    would otherwise find in place."""
    from consan import frontends

    frontends.uninstall()
    yield
    frontends.uninstall()
