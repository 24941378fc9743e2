"""The Triton front end without a GPU: the interception point, the build from Triton's
PTX stage, and how a launch is handed to the session and back to Triton's launcher."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from unittest.mock import patch

import pytest

triton = pytest.importorskip("triton")

from consan import runtime, toolchain, triton_hook  # noqa: E402
from consan import session as consan_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_hook_patches_triton_when_it_is_imported_later_and_undoes_it():
    code = (
        "import sys\n"
        "from consan import frontends, triton_hook\n"
        "frontends.install()\n"
        "assert 'triton' not in sys.modules, 'installing must not import triton'\n"
        "import triton\n"
        "from triton.compiler.compiler import CompiledKernel\n"
        "assert 'run' in triton_hook._patched\n"
        "assert CompiledKernel.__dict__['run'] is not triton_hook._patched['run']\n"
        "original = triton_hook._patched['run']\n"
        "frontends.uninstall()\n"
        "assert CompiledKernel.__dict__['run'] is original and not triton_hook.installed()\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    @triton.jit
    def stage(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x + offs, mask=offs < n)
        tl.store(out + offs, tl.cumsum(v, 0), mask=offs < n)  # a reduction through smem

    src = ASTSource(fn=stage, signature={"x": "*fp32", "out": "*fp32", "n": "i32",
                                         "BLOCK": "constexpr"}, constexprs={"BLOCK": 1024})
    # A private cache: Triton's key ignores the file, so a shared cache could hand back this
    # kernel compiled from another checkout, its line info naming that checkout's file.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton_cache")))
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})


def test_a_compiled_kernel_builds_from_its_ptx_stage(compiled, monkeypatch, fresh_cache):
    monkeypatch.setattr(runtime, "device_arch", lambda: toolchain.Arch.parse("sm_90a"))
    k = triton_hook._Kernel(compiled)
    assert k.kernel == compiled.metadata.name and k.display_name == "stage"
    b, work = k.build()
    # (its cumsum's shared memory is proven race-free: it would run natively; the
    # instrumented build is made all the same, and checked instrumented without proofs)
    assert not work and list(b.instrumented.proven) == [k.kernel]
    assert k.native_build() is b  # (its later launches skip build(): run natively)
    sites = b.instrumented.sites.sites
    assert any(s.loc and s.loc.file == __file__ for s in sites)
    monkeypatch.setenv("CONSAN_PROOF", "0")
    assert k.native_build() is None
    b2, work = k.build()
    assert b2 is b and work and b.cubin  # built once per compiled kernel and arch
    assert k.native_build() is None


def test_a_kernel_without_its_ptx_is_not_checked_and_says_why(compiled, monkeypatch):
    from consan.session import NotCheckable

    monkeypatch.setattr(runtime, "device_arch", lambda: toolchain.Arch.parse("sm_90a"))

    class Stripped:
        hash, metadata, src = "no-ptx-" + compiled.hash, compiled.metadata, compiled.src
        asm = {"cubin": b""}

    with pytest.raises(NotCheckable, match="only the cubin"):
        triton_hook._Kernel(Stripped()).build()


def test_a_kernel_that_cannot_be_instrumented_is_tried_once(compiled, monkeypatch):
    """A loop or an autotuner launching it again gets the same reason, not another build."""
    from consan.session import NotCheckable

    monkeypatch.setattr(runtime, "device_arch", lambda: toolchain.Arch.parse("sm_90a"))
    builds = []

    def failing(*a, **k):
        builds.append(a)
        raise ValueError("cannot parse address operand")

    monkeypatch.setattr(runtime, "build", failing)

    class Other:
        hash, metadata, src, asm = "once-" + compiled.hash, compiled.metadata, compiled.src, \
            compiled.asm

    for _ in range(3):
        with pytest.raises(NotCheckable, match="could not instrument it .ValueError: cannot"):
            triton_hook._Kernel(Other()).build()
    assert len(builds) == 1


def test_a_launch_goes_to_the_session_and_back_through_tritons_launcher(compiled):
    calls = []

    def native(*a):
        calls.append(a)

    class Prepared:
        function = type("F", (), {"ptr": 0xABC})()
        launch_shared_mem = 40960

    class Session:
        def launch(self, fn, grid, block, launcher, shared_mem, stream, cooperative,
                   run_native, extra_launch, values):
            # (the integer arguments and maps come as functions: asked only by a proof)
            self.seen = (fn.kernel, grid, block, shared_mem, stream.ptr, cooperative,
                         extra_launch, launcher.args, *values())
            launcher(Prepared())

    s = Session()
    with patch.object(consan_session, "_active", s):  # (the session the launch is made in)
        triton_hook._checked_run(compiled, native, s, 3, 2, 1, 77, 0x111, (4, 1, 1024), "md",
                                 "enter", "exit", "arg0", "arg1", 5, 1024)
    # (n, the kernel's third parameter, is the one integer a proof before launch may use)
    assert s.seen == (compiled.metadata.name, (3, 2, 1), (128, 1, 1), 1024, 77, False, None,
                      (), {2: (5, 32)}, ())
    # Triton's launcher packs the very same arguments; only the function and smem change
    assert calls == [(3, 2, 1, 77, 0xABC, (4, 1, 40960), "md", "enter", "exit", "arg0",
                      "arg1", 5, 1024)]


def test_integer_arguments_are_numbered_as_the_kernels_parameters():
    sig = {"a": "*fp16", "one": "constexpr", "M": "i32", "eps": "fp32", "K": "i64",
           "BK": "constexpr", "flag": "u1", "n": "u32"}
    # (a constexpr is no parameter; a pointer, float or flag is one, not given)
    assert triton_hook.scalar_params(sig, [0, 1, 2048, 1e-5, 2**40, 64, True, 7]) == \
        {1: (2048, 32), 3: (2**40, 64), 5: (7, 32)}
    # (a tensor descriptor expands into several parameters: nothing after it is numbered)
    desc = {"d": "tensordesc<fp16[64, 64]>", "N": "i32"}
    assert triton_hook.scalar_params({"K": "i32", **desc}, [5, object(), 9]) == {0: (5, 32)}
    # (a launch whose arguments do not match its signature: none)
    assert triton_hook.scalar_params(sig, [0, 1]) == {} == triton_hook.scalar_params(None, [])


def test_integer_arguments_after_tensor_descriptors_are_numbered_by_the_kernels_params():
    """Triton's launcher makes a host tensor descriptor a tensor map, its shape (i32) and
    strides (i64) where the kernel reads it through TMA, else a pointer, shape and strides
    (i64), a padding flag, shape and strides: the integers after it are numbered so only
    where the kernel declares exactly those parameters."""
    from instrument.static_proof import MAP_BITS

    sig = {"a": "tensordesc<fp16[128, 64]>", "b": "tensordesc<fp16[64, 128]>", "M": "i32",
           "K": "i64", "BK": "constexpr"}
    args = [object(), object(), 2048, 512, 64]
    tma = [MAP_BITS, 32, 32, 64, 64] * 2
    meta = [{"block_size": [128, 64]}, {"block_size": [64, 64]}]
    # (Triton adds its scratch pointers after the signature's parameters)
    assert triton_hook.scalar_params(sig, args, meta, [*tma, 32, 64, 64, 64]) == \
        {10: (2048, 32), 11: (512, 64)}
    plain = [64, 64, 64, 64, 64, 8, 32, 32, 64, 64] * 2
    assert triton_hook.scalar_params(sig, args, None, [*plain, 32, 64]) == \
        {20: (2048, 32), 21: (512, 64)}
    # declared otherwise than the launcher would pass them (a parameter short, an i32 at 64
    # bits, too few, a map where a pointer is), or no declaration given: nothing after them
    for wrong in ([*tma[:-1], 32, 64], [*tma, 64, 64], [*tma, 32], None):
        assert triton_hook.scalar_params(sig, args, meta, wrong) == {}
    assert triton_hook.scalar_params(sig, args, None, [*tma, 32, 64]) == {}


def test_an_empty_grid_launches_natively(compiled):
    calls = []
    triton_hook._checked_run(compiled, lambda *a: calls.append(a), object(), 0, 1, 1, 0, 9,
                             (4, 1, 0), None, None, None)
    assert calls and calls[0][4] == 9


def test_a_kernel_with_nothing_to_check_runs_natively_counted_without_the_full_path(
        monkeypatch, fresh_cache):
    """A kernel with no shared memory (Triton's vector add) is built once; later launches
    skip the session's launch path (Session.launch_native): counted, selected, native."""
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from consan import session

    @triton.jit
    def add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n) + tl.load(y + offs, mask=offs < n),
                 mask=offs < n)

    monkeypatch.setenv("TRITON_CACHE_DIR", str(fresh_cache / "triton"))
    monkeypatch.setattr(runtime, "device_arch", lambda: toolchain.Arch.parse("sm_90a"))
    src = ASTSource(fn=add, signature={"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32",
                                       "BLOCK": "constexpr"}, constexprs={"BLOCK": 1024})
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    s = session.Session(session.Options(count_other_launches=False, launch_count=3),
                        print_findings=False)
    full = []
    launch = s.launch
    monkeypatch.setattr(s, "launch", lambda *a, **k: full.append(1) or launch(*a, **k))
    calls = []
    with session.active(s):
        for _ in range(5):
            triton_hook._checked_run(compiled, lambda *a: calls.append(a), s, 4, 1, 1, 0, 9,
                                     (4, 1, 0), None, None, None, "x", "y", "out", 4096)
    assert len(calls) == 5 and all(c[4] == 9 for c in calls)  # Triton's own function
    assert full == [1]  # only the first launch took the session's full path
    stats = s.report.kernels["add"]
    assert stats.launches_checked == 3 and s.report.skipped == {"--launch-count": 2}


def test_a_launcher_kept_past_its_session_runs_natively_after_it(compiled):
    """`compiled.run` fetched in a session (PyTorch Inductor stores it) and called after the
    session ended runs Triton's launcher as it is: it went on launching into the finished
    session (checked, its findings in a report already read)."""
    calls = []

    class Ended:
        def launch(self, *a, **k):
            raise AssertionError("a launch into a session that has ended")

    assert consan_session.current_session() is None
    triton_hook._checked_run(compiled, lambda *a: calls.append(a), Ended(), 3, 2, 1, 77, 0x111,
                             (4, 1, 1024), "md", "enter", "exit", "arg0")
    assert calls == [(3, 2, 1, 77, 0x111, (4, 1, 1024), "md", "enter", "exit", "arg0")]


def test_a_triton_launch_is_placed_at_the_users_line_not_tritons():
    from consan import cupy_build

    roots = cupy_build._internal_roots()
    assert any(r.startswith(str(Path(triton.__file__).parent)) for r in roots)


def test_inductor_is_told_to_launch_through_triton_while_consan_is_installed(monkeypatch):
    """Inductor's static CUDA launcher calls cuLaunchKernel on Triton's cubin past
    CompiledKernel.run: its kernels ran unchecked. Installed, consan turns it off (the
    variable its config reads when imported, the attribute when it already is) and puts
    both back when it is uninstalled."""
    import types

    triton_hook.uninstall()
    cfg = types.ModuleType("torch._inductor.config")
    cfg.use_static_cuda_launcher = True
    monkeypatch.setitem(sys.modules, "torch._inductor.config", cfg)
    monkeypatch.setenv("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER", "1")
    triton_hook.install()
    try:
        assert cfg.use_static_cuda_launcher is False
        assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
        triton_hook.install()  # (idempotent: what it restores stays the user's)
    finally:
        triton_hook.uninstall()
    assert cfg.use_static_cuda_launcher is True
    assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "1"
    monkeypatch.delenv("TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER")
    monkeypatch.delitem(sys.modules, "torch._inductor.config")
    triton_hook.install()  # not imported yet: the variable alone, gone again after
    try:
        assert os.environ["TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER"] == "0"
        late = types.ModuleType("torch._inductor.config")  # imported now: it reads "0"
        late.use_static_cuda_launcher = False
        monkeypatch.setitem(sys.modules, "torch._inductor.config", late)
    finally:
        triton_hook.uninstall()
    assert "TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER" not in os.environ
    assert late.use_static_cuda_launcher is True  # (Inductor's default where it is unset)
