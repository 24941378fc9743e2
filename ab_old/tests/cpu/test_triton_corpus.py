"""The Triton corpus without a GPU: every kernel compiles for its target, consan instruments
it with nothing left unchecked, and it assembles with the checker for sm_90a.

Triton's PTX is cached under tests/corpus_build.CACHE_DIR (keyed by the kernel's source hash, its
specialization, options, target and Triton's version); each distinct instrumented module is
linked once, and its cubin kept there by its inputs' bytes (corpus_build.links_kept). Run
with `-s` to see what each kernel holds.
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton", reason="the Triton corpus needs triton (pip install .[triton])")

from consan import toolchain  # noqa: E402
from instrument.ptx import parse  # noqa: E402
from instrument.rewrite import Instrumented, instrument  # noqa: E402
from tests import corpus_build  # noqa: E402
from tests.kernels import triton_corpus as corpus  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CACHE = corpus_build.CACHE_DIR
ARCH = toolchain.Arch.parse("sm_90a")

# Instructions consan may leave unchecked in a case, by case name: {text prefix: why}. Empty
# today: every shared-memory and synchronising instruction of the corpus is modelled.
ALLOWED_UNMODELED: dict[str, dict[str, str]] = {}

NAMES = [c.name for c in corpus.CASES]
CASE = {c.name: c for c in corpus.CASES}
MATMUL_90 = [c.name for c in corpus.CASES
             if c.fn is corpus.matmul_kernel and c.capability == 90]


@functools.cache
def _compiled(name: str) -> tuple[str, dict]:
    return corpus.cached_ptx(CASE[name], CACHE)


@functools.cache
def _instrumented(name: str) -> Instrumented:
    return instrument(parse(_compiled(name)[0], f"{name}.ptx"), value_tags=True)  # as the hook


_CUBINS: dict[str, bytes] = {}


def _cubin(name: str) -> bytes:
    """Linked once per distinct instrumented module (cases with the same PTX share it)."""
    ins = _instrumented(name)
    digest = hashlib.sha256(ins.ptx.encode()).hexdigest()
    if digest not in _CUBINS:
        with corpus_build.links_kept():  # (kept on disk by its inputs' bytes)
            _CUBINS[digest] = toolchain.link_with_checker(ins, f"{name}.ptx", ARCH)
    return _CUBINS[digest]


def _features(ptx: str) -> list[str]:
    pats = {"wgmma": r"\bwgmma\.mma_async", "cp.async": r"\bcp\.async\.c[ag]\b",
            "tma": r"\bcp\.async\.bulk\.tensor", "mbarrier": r"\bmbarrier\.",
            "mma.sync": r"\bmma\.sync\b", "ldmatrix": r"\bldmatrix\b", "stmatrix": r"\bstmatrix\b"}
    return [k for k, p in pats.items() if re.search(p, ptx)]


def test_the_corpus_imports_without_triton_or_torch():
    code = ("import sys\n"
            "sys.modules['triton'] = None\n"
            "import tests.kernels.triton_corpus as c\n"
            "assert c.CASES == [] and not c.HAVE_TRITON\n"
            "assert 'torch' not in sys.modules\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_argument_specialization_follows_tritons_jit():
    """The corpus's rule for signature/attrs is the JIT's own (native_specialize_impl)."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend
    from triton.tools.tensor_descriptor import TensorDescriptor

    class Dtype:
        itemsize, is_floating_point = 2, True

        def __str__(self) -> str:
            return "torch.float16"

    class Tensor:  # what the JIT reads of a torch tensor
        dtype, shape = Dtype(), (256, 256)

        def data_ptr(self) -> int:
            return 1 << 20

        def stride(self) -> tuple[int, int]:
            return (256, 1)

    def jit(v: object) -> tuple:
        return tuple(native_specialize_impl(BaseBackend, v, False, True, True))

    for v in (1, 0, 16, 17, 784, 1536, -16, 2**31 - 16, 2**31, 2**40 + 3, 1e-5, True):
        assert corpus._arg_spec(v) == jit(v), v
    assert corpus._arg_spec(corpus._Ptr("fp16")) == jit(Tensor())
    desc = TensorDescriptor(Tensor(), [256, 256], [256, 1], [128, 64])
    assert corpus._arg_spec(corpus._Desc("fp16", (128, 64))) == jit(desc)


@pytest.mark.parametrize("name", NAMES)
def test_a_corpus_kernel_is_instrumented_whole_and_links(name):
    case = CASE[name]
    ptx, meta = _compiled(name)
    ins = _instrumented(name)
    print(f"\n{name}: sm_{case.capability}, shared {meta['shared']} B, {_features(ptx)}, "
          f"{len(ins.sites)} probed sites, {len(ins.unmodeled)} unmodelled")
    for u in ins.unmodeled:
        print(f"  unmodelled: {u}")
    assert meta["name"] in ins.kernels
    allowed = ALLOWED_UNMODELED.get(name, {})
    left = [str(u) for u in ins.unmodeled if not any(u.text.startswith(p) for p in allowed)]
    assert not left, "\n".join(left)
    assert _cubin(name)


@pytest.mark.parametrize("name", NAMES)
def test_launch_values_land_on_parameters_of_their_width(name):
    """The integer arguments Triton's launcher passes (consan.triton_hook.scalar_params) are
    numbered as the compiled kernel's parameters: each lands on a parameter declared with
    its width, and the signature's parameters before the first one not numbered are the
    kernel's first ones (a proof for one launch reads them by these positions)."""
    from instrument.static_proof import _param_decls

    ptx, meta = _compiled(name)
    mod = parse(ptx, f"{name}.ptx")
    (fn,) = [f for f in mod.functions if f.name == meta["name"]]
    index = {id(it): i for i, it in enumerate(mod.items)}
    decls = _param_decls(mod.items[index[id(fn.header)]:fn.open_index])
    case = CASE[name]
    kinds = [t for t in case.signature.values() if t != "constexpr"]
    numbered = [t for t in kinds[:next((i for i, t in enumerate(kinds) if t.startswith(
        "tensordesc")), len(kinds))]]
    assert len(decls) >= len(numbered)
    for i, t in enumerate(numbered):  # (a pointer is 64 bits, an i32 32, an fp32 32)
        want = 64 if t.startswith("*") else int("".join(ch for ch in t if ch.isdigit()))
        assert decls[i][1] == want, (i, t, decls[i])
    for i, (_, bits) in case.scalars.items():
        assert decls[i][1] == bits, (i, decls[i], case.scalars)
    # past its tensor descriptors too, where the launcher's expansion of them is checked
    # against the kernel's declared parameters (the persistent matmul's M, N, K)
    scalars, _ = corpus.launch_values(case, ptx, meta)
    assert case.scalars.items() <= scalars.items()
    for i, (_, bits) in scalars.items():
        assert decls[i][1] == bits, (i, decls[i], scalars)
    if name == "matmul_tma_persistent":
        assert scalars == {15: (corpus.TMA_M, 32), 16: (corpus.TMA_N, 32),
                           17: (corpus.TMA_K, 32)}


def _prove_at(ptx: str, kernel: str, scalars: dict, maps: tuple, grid: tuple):
    from tests.proof_util import prove_kernel

    return prove_kernel(ptx, kernel, params=scalars, maps=maps, grid=grid)


def test_the_persistent_matmul_is_proven_for_its_launch_and_a_tile_reuse_race_is_not():
    """Triton's persistent TMA matmul on an H100's 132 programs: 124 run two output tiles,
    8 one, by `%ctaid` (its tile loop's branch is followed each way). Without the bulk-group
    wait before its epilogue writes the staging tile again, a program's first TMA store may
    still be reading it: refused, naming both lines, where programs run two tiles; proven
    where each runs one (256 programs)."""
    from instrument.static_proof import Proof

    name = "matmul_tma_persistent"
    ptx, meta = _compiled(name)
    case = CASE[name]
    scalars, maps = corpus.launch_values(case, ptx, meta)
    assert maps == (128 * 64 * 2, 64 * 64 * 2, 128 * 64 * 2) and case.grid == (132, 1, 1)
    got = _prove_at(ptx, meta["name"], scalars, maps, case.grid)
    assert isinstance(got, Proof) and got.params == 3, got
    lines = ptx.split("\n")
    (wait,) = [i for i, x in enumerate(lines) if "cp.async.bulk.wait_group.read" in x and
               any("stmatrix" in y for y in lines[i:i + 4])]
    store = next(i for i, x in enumerate(lines) if "cp.async.bulk.tensor.2d.global.shared"
                 in x)
    first_write = next(i for i, x in enumerate(lines) if i > wait and "stmatrix" in x)
    mutant = "\n".join(lines[:wait] + ["\t// (no wait)"] + lines[wait + 1:])
    why = _prove_at(mutant, meta["name"], scalars, maps, case.grid)
    assert f"lines {store + 1}, {first_write + 1}: the bulk store" in why, why
    assert isinstance(_prove_at(mutant, meta["name"], scalars, maps, (256, 1, 1)), Proof)


@pytest.mark.parametrize("name", NAMES)
def test_every_probed_site_names_the_kernels_file(name):
    """Reductions (tl.max, tl.sum) are Triton library code inlined into the kernel: their
    sites name the kernel's line that calls them (the chain Triton writes in the .loc
    comment)."""
    sites = _instrumented(name).sites.sites
    assert sites
    elsewhere = {str(s.loc) for s in sites
                 if s.loc is None or not s.loc.file.endswith("triton_corpus.py")}
    assert not elsewhere, sorted(elsewhere)


@pytest.mark.parametrize("name", MATMUL_90)
def test_the_hopper_matmuls_pipeline_with_cp_async_into_wgmma(name):
    counts = _instrumented(name).counts
    assert counts["async.wgmma"] > 0 and counts["async.cp"] > 0, dict(counts)


def test_the_reference_matmul_has_three_stages_of_smem():
    """3 stages x (128x64 + 64x128) fp16 = 96 KiB, as Triton builds it on an H100."""
    assert _compiled(corpus.REFERENCE_MATMUL)[1]["shared"] == 3 * (128 * 64 + 64 * 128) * 2


def test_the_sm80_matmul_takes_the_mma_sync_path():
    counts = _instrumented("matmul_sm80").counts
    assert counts["async.wgmma"] == 0 and counts["async.cp"] > 0, dict(counts)
    assert "mma.sync" in _features(_compiled("matmul_sm80")[0])


def test_the_persistent_matmul_moves_its_tiles_by_tma():
    counts = _instrumented("matmul_tma_persistent").counts
    assert counts["async.tensor_load"] > 0 and counts["async.tensor_store"] > 0, dict(counts)
    assert counts["mbarrier"] > 0 and counts["async.wgmma"] > 0, dict(counts)


@pytest.mark.parametrize("name", ["attn_fwd", "attn_fwd_causal"])
def test_attention_runs_both_products_on_wgmma(name):
    counts = _instrumented(name).counts
    assert counts["async.wgmma"] > 0 and counts["async.wgmma_commit"] >= 2, dict(counts)


# the corpus kernels proven race-free before launch, at the launch's block and integer
# arguments (tests/gpu/test_triton_corpus.py runs them natively under a session and
# instrumented with CONSAN_PROOF=0); layer_norm_bwd's spin lock is a uniform loop, its
# dW/dB kernel's warps store replicas
PROVEN = {"vector_add", "softmax", "layer_norm_fwd", "layer_norm_bwd", "layer_norm_bwd_dwdb",
          "matmul_bk32_s2_w4", "matmul_sm80", "attn_fwd",
          *(f"matmul_s{s}_w{w}" for s in (2, 3, 4, 5) for w in (4, 8))}


@pytest.mark.parametrize("name", NAMES)
def test_the_kernels_proven_before_launch(name):
    from benchmarks.proof_coverage import verdict

    ptx, meta = _compiled(name)
    got, _ = verdict(ptx, meta["name"], None, CASE[name].scalars)
    assert got.startswith("proven") == (name in PROVEN), got


# The barriers (in program order) whose removal leaves the kernel provable: each separates
# two prologue copies into different stages, or repeats a later barrier before the same
# accesses; removing any other one opens a race the proof names.
NOT_NEEDED = {"matmul_sm80": {0}, "attn_fwd": {0, 3}}


@pytest.mark.parametrize("name", sorted(NOT_NEEDED))
def test_each_barrier_the_bfe_addressed_kernels_need_is_needed(name):
    """Triton's sm_80 matmul and attention kernel address shared memory through `bfe.s32`
    (signed bit-field extracts of the thread index): proven, and a mutant without any one
    barrier the kernel needs is refused for a race."""
    from benchmarks.proof_coverage import verdict

    ptx, meta = _compiled(name)
    lines = ptx.split("\n")
    bars = [i for i, line in enumerate(lines) if line.strip().startswith("bar.sync")]
    kept = set()
    for n, i in enumerate(bars):
        got, _ = verdict("\n".join(lines[:i] + lines[i + 1:]), meta["name"], None,
                         CASE[name].scalars)
        if got.startswith("proven"):
            kept.add(n)
        else:
            assert "touch" in got, got
    assert kept == NOT_NEEDED[name], kept
