"""What the GPU test modules share: source-line markers, the target, and the standing rule
that an instrumented kernel computes exactly what the native one does (the `gpu` marker and
its skip live in tests/conftest.py).

The rule: every clean kernel a GPU test runs under consan also runs natively on the very same
inputs, and every buffer it writes must be bitwise equal (NaN payloads and -0.0 included):
an instrumented kernel that computes a different answer is the worst bug consan can have.
The native run is built from the very PTX consan instruments (`native_ptx`), so the two
differ only by the probes and the checker. Racy kernels are exempt: their result is timing-
dependent by construction.

Run as a script, this file wraps a program so that its kernels' outputs can be compared
across a native run and a `consan run` (`dump_main`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import runpy
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":  # `gpu_util.py dump ...` from any folder: consan is beside tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Each byte of a poisoned integer buffer (floats get all-ones bytes: a NaN).
POISON_BYTE = 0xA5

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).resolve().with_name("gpu_scripts")


def run_python(*args: str, cwd: Path = SCRIPTS, timeout: int = 600):
    """`python ARGS` in a child process, with this checkout importable and no COLUMNS (so
    consan's output is as a pipe gets it): the CompletedProcess, text captured."""
    import subprocess

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("COLUMNS", None)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def line_of(src: str, marker: str) -> int:
    """1-based line of the one line of `src` carrying `marker` (a whole token)."""
    hits = [i for i, s in enumerate(src.splitlines(), 1)
            if re.search(re.escape(marker) + r"(?![\w-])", s)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def lines(site) -> set[int]:
    """A site's source line and the lines of its inline chain (call sites, outward)."""
    return {site.loc.line, *(c.line for c in site.inlined_at)} if site and site.loc else set()


def need_sm90(what: str = "clusters") -> None:
    """Skip the test on a GPU older than sm_90 (`what` needs it)."""
    import cupy as cp
    import pytest

    if int(cp.cuda.Device().compute_capability) < 90:
        pytest.skip(f"{what} need sm_90")


def arch_option() -> str:
    import cupy as cp

    cc = cp.cuda.Device().compute_capability
    return f"-arch=sm_{cc}{'a' if cc == '90' else ''}"


# ------------------------------------------------------------------ bitwise comparison

def host(a: Any) -> np.ndarray:
    """A NumPy copy of a CuPy array (NumPy arrays as they are)."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


def _words(a: np.ndarray) -> np.ndarray:
    """The raw bits of each element, one row per element (a NaN equals only its own bits)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    if a.dtype.itemsize in (1, 2, 4, 8):
        return flat.view(f"u{a.dtype.itemsize}").reshape(-1, 1)
    return flat.view(np.uint8).reshape(-1, a.dtype.itemsize)


def _element(a: np.ndarray, words: np.ndarray, i: int) -> str:
    return f"{a.reshape(-1)[i]} (0x{words[i].tobytes()[::-1].hex()})"


def assert_same_bits(native: Any, checked: Any, what: str = "output", show: int = 8) -> None:
    """Fail unless `checked` holds the very bits of `native` (same dtype and shape).

    The message says how many elements differ and shows the first `show` of them (index,
    native value, checked value, each with its raw bits).
    """
    n, c = host(native), host(checked)
    assert n.dtype == c.dtype and n.shape == c.shape, (
        f"{what}: the checked run's buffer is {c.dtype}{list(c.shape)}, the native run's "
        f"{n.dtype}{list(n.shape)}")
    nw, cw = _words(n), _words(c)
    bad = np.flatnonzero((nw != cw).any(axis=1))
    if bad.size == 0:
        return
    rows = []
    for i in bad[:show]:
        at = np.unravel_index(int(i), n.shape) if n.ndim > 1 else (int(i),)
        rows.append(f"  [{', '.join(map(str, at))}] native {_element(n, nw, int(i))}, "
                    f"checked {_element(c, cw, int(i))}")
    more = f"\n  ... {bad.size - show} more" if bad.size > show else ""
    raise AssertionError(
        f"{what}: {bad.size} of {n.size} elements differ bitwise between the native and the "
        f"instrumented run (an instrumented kernel must compute the same bits):\n"
        + "\n".join(rows) + more)


def assert_same_outputs(native: Sequence[Any], checked: Sequence[Any], what: str) -> None:
    """`assert_same_bits` for each buffer of a launch, in order."""
    assert len(native) == len(checked), (what, len(native), len(checked))
    for i, (n, c) in enumerate(zip(native, checked, strict=True)):
        assert_same_bits(n, c, f"{what}, output {i}")


def poisoned(shape, dtype) -> Any:
    """A CuPy buffer whose every element is a sentinel (NaN for floats, 0xA5 bytes for the
    rest), so an element a run leaves unwritten cannot pass for a computed one."""
    import cupy as cp

    a = cp.empty(shape, dtype=dtype)
    a.view(cp.uint8).fill(0xFF if a.dtype.kind in "fc" else POISON_BYTE)
    return a


def poison(a: Any) -> Any:
    """Poison an existing CuPy buffer in place (see `poisoned`); returns it."""
    import cupy as cp

    a.view(cp.uint8).fill(0xFF if a.dtype.kind in "fc" else POISON_BYTE)
    return a


# ------------------------------------------------------------------ native launches

def native_ptx(source: str, options: Sequence[str] = (),
               source_name: str = "kernel.cu") -> tuple[str, str, Any]:
    """(module name, PTX, arch): the PTX `consan.check`/`consan.prepare` would instrument.

    As `consan.runtime.build` does: PTX is taken as it is; CUDA C++ goes through consan's
    NVRTC with `-arch=compute_XX`, the caller's other options and `-lineinfo` (added unless
    some line-info option is there). tests/cpu/test_gpu_util.py holds the two to the same
    PTX.
    """
    return _native_ptx(source, tuple(options), source_name)


@functools.lru_cache(maxsize=64)
def _native_ptx(source: str, options: tuple[str, ...], source_name: str) -> tuple[str, str, Any]:
    from consan import runtime, toolchain

    rest, arch = toolchain.split_arch(options)
    arch = arch or runtime.device_arch()
    if runtime.is_ptx(source):
        return "kernel.ptx", source, arch
    if not any(o in ("-G", "--device-debug", "-lineinfo", "--generate-line-info") for o in rest):
        rest.append("-lineinfo")
    ptx = toolchain.compile_cuda(source, source_name, [f"-arch={arch.compute}", *rest])
    return source_name + ".ptx", ptx, arch


@functools.lru_cache(maxsize=64)
def native_cubin(source: str, options: tuple[str, ...] = (),
                 source_name: str = "kernel.cu") -> bytes:
    """The native module: `native_ptx` assembled by the nvJitLink consan links with (and its
    CONSAN_LINK_OPTIONS), without probes or checker."""
    from consan import toolchain

    name, ptx, arch = native_ptx(source, options, source_name)
    return toolchain.link([(name, ptx)], arch, tuple(os.environ.get("CONSAN_LINK_OPTIONS",
                                                                    "").split()))


def _entry(ptx: str, kernel: str) -> str:
    """The PTX name of `kernel` (given as in the PTX, or by its C++ name)."""
    from instrument.rewrite import demangle

    entries = re.findall(r"\.entry\s+([\w$.]+)", ptx)
    if kernel in entries:
        return kernel
    hits = [e for e in entries if demangle(e) == kernel]
    assert len(hits) == 1, f"kernel {kernel!r} among {entries}"
    return hits[0]


@functools.lru_cache(maxsize=64)
def _native_function(source: str, kernel: str, options: tuple[str, ...], source_name: str):
    import cupy as cp

    module = cp.cuda.function.Module()
    module.load(native_cubin(source, options, source_name))
    return module, module.get_function(_entry(native_ptx(source, options, source_name)[1],
                                              kernel))


def _dim3(v) -> tuple[int, int, int]:
    v = (v,) if isinstance(v, int) else tuple(v)
    return (*(int(x) for x in v), *(1,) * (3 - len(v)))


def native_launch(source: str, kernel: str, grid, block, args: tuple, shared_mem: int = 0,
                  options: Sequence[str] = (), source_name: str = "kernel.cu") -> None:
    """Launch `kernel` natively, built as `native_cubin`, and wait for it.

    Dynamic shared memory above 48 KiB gets the attribute set, as consan does for its launch.
    """
    import cupy as cp
    from cupy.cuda import driver

    _module, fn = _native_function(source, kernel, tuple(options), source_name)
    static = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn.ptr)
    if static + shared_mem > 48 * 1024:
        driver.funcSetAttribute(fn.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                shared_mem)
    fn(_dim3(grid), _dim3(block), tuple(args), shared_mem=shared_mem)
    cp.cuda.get_current_stream().synchronize()


MakeArgs = Callable[[], tuple]


def check_against_native(source: str, kernel: str, make_args: MakeArgs, *, grid, block,
                         shared_mem: int = 0, options: Sequence[str] = (),
                         what: str | None = None):
    """Run `kernel` natively, then under `consan.check`, each on its own `make_args()`, and
    assert that every output is bitwise equal. Returns (report, checked outputs as NumPy).

    `make_args()` returns (args, outputs[, keep]): fresh launch arguments, the buffers among
    them that the kernel writes, and anything else that must live through the launch (the
    arrays a tensor map points into: the map holds no reference). It must make identical
    inputs on every call (copies, or the same seed) and poison outputs the kernel writes
    only in part. The native run goes first, so a read-only input shared by both runs (a
    tensor map's matrix) is still pristine there.
    """
    import consan

    args, outs, *_keep = make_args()
    native_launch(source, kernel, grid, block, args, shared_mem, options)
    native = [host(o).copy() for o in outs]
    args, outs, *_keep = make_args()
    rep = consan.check(source, kernel, grid=grid, block=block, args=args, shared_mem=shared_mem,
                       options=tuple(options))
    checked = [host(o) for o in outs]
    assert_same_outputs(native, checked, f"{what or kernel} (consan report ok={rep.ok}, "
                                         f"{len(rep.violations)} violation(s))")
    return rep, checked


def clean_and_native(source: str, kernel: str, n: int, dtype, *, grid, block,
                     options: Sequence[str] = ()):
    """`kernel(out)` on a poisoned `out` of n elements, natively and under consan: the
    report must be clean, with no note and nothing left unmodelled, and both runs must
    write the same bits. Returns out (NumPy)."""
    def make_args():
        out = poisoned((n,), dtype)
        return (out,), [out], None

    rep, (out,) = check_against_native(source, kernel, make_args, grid=grid, block=block,
                                       options=options)
    assert rep.ok and not rep.notes and not rep.unmodeled, str(rep)
    return out


# ------------------------------------------------------------------ programs: dump outputs

DUMP_SCRIPT = Path(__file__).resolve()


def dump_command(out: str | os.PathLike, script: str, *args: str,
                 call: str | None = None) -> list[str]:
    """Arguments after `python` or `consan run` that run `script` through `dump_main`."""
    return [str(DUMP_SCRIPT), "dump", str(out), *(("--call", call) if call else ()), script,
            *args]


def _arrays(values: dict[str, Any]) -> dict[str, np.ndarray]:
    got = {k: host(v) for k, v in values.items()
           if isinstance(v, np.ndarray) or (hasattr(v, "__cuda_array_interface__")
                                             and hasattr(v, "get"))}
    return {k: v for k, v in got.items() if v.dtype != object}


def _save(path: str, arrays: dict[str, np.ndarray]) -> None:
    """An .npz file of `arrays` (np.savez would take a global named `file` for its own)."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, a in arrays.items():
            with z.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, a, allow_pickle=False)


def dump_main(argv: list[str]) -> int:
    """`gpu_util.py dump OUT.npz [--call FUNC] SCRIPT [ARGS...]`: run SCRIPT as `python
    SCRIPT ARGS` would and save the arrays it leaves behind in OUT.npz, raw bits and all.

    Without --call: the script's global arrays (CuPy and NumPy) at its end. With --call: the
    script is loaded as a module (its `if __name__ == "__main__"` block skipped), FUNC is
    wrapped to keep what it returns, and its `main()` runs; the arrays FUNC returned are
    saved as FUNC_0, FUNC_1, ... Run natively and under `consan run`, the two files hold
    what the native and the instrumented kernels wrote.
    """
    if len(argv) < 3 or argv[0] != "dump":
        print(dump_main.__doc__, file=sys.stderr)
        return 2
    out, rest = argv[1], argv[2:]
    call = None
    if rest[0] == "--call":
        call, rest = rest[1], rest[2:]
    script, args = rest[0], rest[1:]
    sys.argv = [script, *args]
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` does
    status: Any = 0
    if call is None:
        arrays = _arrays(runpy.run_path(script, run_name="__main__"))
    else:
        spec = importlib.util.spec_from_file_location("consan_dumped_program", script)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        results: list[Any] = []
        original = getattr(mod, call)

        def keep(*a: Any, **kw: Any) -> Any:
            r = original(*a, **kw)
            results.append(r)
            return r

        setattr(mod, call, keep)
        try:
            status = mod.main()
        except SystemExit as e:
            status = e.code
        arrays = _arrays({f"{call}_{i}": r for i, r in enumerate(results)})
    _save(out, arrays)
    return 0 if status is None else status


def assert_same_dumps(native: str | os.PathLike, checked: str | os.PathLike, what: str) -> None:
    """Every array of two `dump_main` files bitwise equal, and the same arrays in both."""
    with np.load(native) as n, np.load(checked) as c:
        assert sorted(n.files) == sorted(c.files), (what, n.files, c.files)
        assert n.files, f"{what}: the program left no array to compare"
        for name in sorted(n.files):
            assert_same_bits(n[name], c[name], f"{what}: {name}")


if __name__ == "__main__":
    sys.exit(dump_main(sys.argv[1:]))
