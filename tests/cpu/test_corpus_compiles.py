"""The kernel corpus compiles with NVRTC and the PTX assembles with nvJitLink (no GPU needed)."""

from __future__ import annotations

import re

import pytest

from tests import corpus_build as cb

VARIANTS = cb.corpus_variants()
ASSEMBLY_CASES = [(v, arch) for v in VARIANTS for arch in v.sass_arches]

# PTX constructs the instrumenter's parser must cope with; each must occur somewhere in the
# corpus output so that a regression in the corpus (or the compiler) is noticed.
REQUIRED_CONSTRUCTS = {
    "loc_inlined_at": r"^\s*\.loc\s+\d+\s+\d+\s+\d+,\s*function_name\s+\S+,\s*inlined_at\s",
    "debug_section": r"^\s*\.section\s+\.debug_\w+",
    "debug_info_section": r"^\s*\.section\s+\.debug_info",
    "file_directive": r"^\s*\.file\s+\d+\s+\"",
    "reqntid": r"^\s*\.reqntid\s+\d+",
    "maxntid": r"^\s*\.maxntid\s+\d+",
    "minnctapersm": r"^\s*\.minnctapersm\s+\d+",
    "maxnreg": r"^\s*\.maxnreg\s+\d+",
    "explicitcluster": r"^\s*\.explicitcluster\b",
    "reqnctapercluster": r"^\s*\.reqnctapercluster\s+\d+",
    "maxclusterrank": r"^\s*\.maxclusterrank\s+\d+",
    "blocksareclusters": r"^\s*\.blocksareclusters\b",
    "pragma_nounroll": r'^\s*\.pragma\s+"nounroll";',
    "vector_ld_shared": r"ld\.shared(::cta)?\.v[24]\.\w+\s+\{",
    "vector_st_shared": r"st\.shared(::cta)?\.v[24]\.\w+\s+\[[^\]]+\],\s*\{",
    "inline_asm_scope": r"// begin inline asm\n\s*\{",
    "func_with_retval": r"^\s*(\.visible\s+|\.weak\s+)?\.func\s+\(\s*\.param",
    "func_void": r"^\s*(\.visible\s+|\.weak\s+)?\.func\s+[\w$]+\s*\(",
    "extern_func": r"^\s*\.extern\s+\.func",
    "callprototype": r"\.callprototype",
    "extern_shared": r"^\s*\.extern\s+\.shared",
    "grid_constant_param": r"\.param\s+\.align\s+64\s+\.b8\s+\w+\[128\]",
    "local_depot": r"__local_depot\d+",
    "bar_sync_named_64": r"bar\.sync\s+1,\s*64;",
    "bar_arrive_named_64": r"bar\.arrive\s+1,\s*64;",
    "bar_red_popc": r"bar\.red\.popc\.u32",
    "barrier_sync": r"\bbarrier\.sync\b",
    "bar_warp_sync": r"bar\.warp\.sync",
    "shfl_sync": r"shfl\.sync\.",
    "atom_shared_cas": r"atom\.shared(::cta)?\.cas\.",
    "atom_shared_exch": r"atom\.shared(::cta)?\.exch\.",
    "atom_shared_add": r"atom\.shared(::cta)?\.add\.",
    "subword_st_shared": r"st\.shared(::cta)?\.[ub]8\b",
    "ldmatrix": r"ldmatrix\.sync\.aligned",
    "stmatrix": r"stmatrix\.sync\.aligned",
    "mma_sync": r"mma\.sync\.aligned",
    "cp_async_4": r"cp\.async\.ca\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*4;",
    "cp_async_8": r"cp\.async\.ca\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*8;",
    "cp_async_16_cg": r"cp\.async\.cg\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*16;",
    "cp_async_zfill": r"cp\.async\.cg\.shared\.global\s+\[[^\]]+\],\s*\[[^\]]+\],\s*16,\s*%r\d+;",
    "cp_async_commit": r"cp\.async\.commit_group;",
    "cp_async_wait_group": r"cp\.async\.wait_group\s+\d+;",
    "cp_async_wait_all": r"cp\.async\.wait_all;",
    "cp_async_mbarrier_arrive": r"cp\.async\.mbarrier\.arrive",
    "mbarrier_init": r"mbarrier\.init\.shared",
    "mbarrier_expect_tx": r"mbarrier\.arrive\.expect_tx",
    "mbarrier_try_wait_parity": r"mbarrier\.try_wait\.parity",
    "mbarrier_test_wait": r"mbarrier\.test_wait",
    "mbarrier_inval": r"mbarrier\.inval",
    "fence_mbarrier_init": r"fence\.mbarrier_init",
    "fence_proxy_async": r"fence\.proxy\.async",
    "bulk_g2s": r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes",
    "bulk_s2g": r"cp\.async\.bulk\.global\.shared::cta\.bulk_group",
    "bulk_commit": r"cp\.async\.bulk\.commit_group;",
    "bulk_wait_read": r"cp\.async\.bulk\.wait_group\.read\s+\d+;",
    "bulk_s2g_cache_hint": r"cp\.async\.bulk\.global\.shared::cta\.bulk_group\.L2::cache_hint",
    "bulk_reduce_s2g": r"cp\.reduce\.async\.bulk\.global\.shared::cta\.bulk_group\.\w+\.\w+",
    "fence_proxy_async_release": r"fence\.proxy\.async::generic\.release",
    "bulk_tensor_load": r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global",
    "bulk_tensor_store": r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta",
    "bulk_tensor_load_cta": r"cp\.async\.bulk\.tensor\.1d\.shared::cta\.global\.tile",
    "bulk_tensor_load_5d_hint": r"cp\.async\.bulk\.tensor\.5d\.shared::cluster\.global\.tile"
                                r"\.mbarrier::complete_tx::bytes\.L2::cache_hint",
    "wgmma_fence": r"wgmma\.fence\.sync\.aligned;",
    "wgmma_mma_async": r"wgmma\.mma_async\.sync\.aligned",
    "wgmma_commit": r"wgmma\.commit_group\.sync\.aligned;",
    "wgmma_wait": r"wgmma\.wait_group\.sync\.aligned\s+\d+;",
    "barrier_cluster": r"barrier\.cluster\.(arrive|wait)",
    "mapa": r"\bmapa\.",
    "ld_shared_cluster": r"ld\.shared::cluster\.",
    "st_shared_cluster": r"st\.shared::cluster\.",
    "cluster_ctarank": r"%cluster_ctarank",
    "setmaxnreg": r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32",
    "vprintf": r"\bvprintf\b",
    "call_uni": r"\bcall\.uni\b",
    "f64": r"\.f64\b",
    "f16": r"\.f16\b",
}


@pytest.fixture(scope="session")
def compiled() -> dict[str, str | Exception]:
    """label -> PTX, or the exception raised while compiling that variant."""
    results = cb.compile_all(VARIANTS)
    return {v.label: r for v, r in zip(VARIANTS, results, strict=True)}


def _ptx(compiled: dict[str, str | Exception], label: str) -> str:
    result = compiled[label]
    if isinstance(result, Exception):
        pytest.fail(str(result))
    return result


def test_corpus_size():
    files = cb.corpus_files()
    assert len(files) >= 25, [f.path.name for f in files]
    assert len(VARIANTS) >= 60
    assert any(f.sm90a_only for f in files)
    assert any(not f.sm90a_only for f in files)
    assert sum(1 for v in VARIANTS if v.flavour == "G") >= 5
    assert {v.flavour for v in VARIANTS} == {"O3", "lineinfo", "G"}


def test_sm90a_marker_is_first_line():
    for f in cb.corpus_files():
        first = f.source().splitlines()[0]
        if f.sm90a_only:
            assert first.strip() == "// consan-corpus: sm_90a-only", f.path.name


def test_labels_unique():
    labels = [v.label for v in VARIANTS]
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
def test_compiles(compiled, variant):
    ptx = _ptx(compiled, variant.label)
    target = variant.arch.replace("compute_", "sm_")
    assert re.search(rf"^\.target\s+{target}\b", ptx, re.M), "unexpected .target"
    assert ".entry" in ptx
    if variant.flavour in ("lineinfo", "G"):
        assert re.search(r"^\s*\.loc\s", ptx, re.M)
    if variant.flavour == "G":
        assert ".section\t.debug_info" in ptx or re.search(r"\.section\s+\.debug_info", ptx)


@pytest.mark.parametrize(
    ("variant", "sass_arch"), ASSEMBLY_CASES, ids=lambda x: getattr(x, "label", x)
)
def test_assembles(compiled, variant, sass_arch):
    ptx = _ptx(compiled, variant.label)
    cubin = cb.assemble(ptx, sass_arch, name=variant.label)
    assert cubin[:4] == b"\x7fELF"


def test_corpus_ptx_api():
    pairs = cb.corpus_ptx()
    assert len(pairs) == len(VARIANTS) >= 60
    for label, ptx in pairs:
        assert isinstance(label, str) and isinstance(ptx, str)
        assert "\0" not in ptx


def test_required_constructs_present(compiled):
    texts = [r for r in compiled.values() if isinstance(r, str)]
    missing = [
        name for name, pat in REQUIRED_CONSTRUCTS.items()
        if not any(re.search(pat, t, re.M) for t in texts)
    ]
    assert not missing, f"constructs missing from corpus PTX: {missing}"


def test_compile_error_carries_log():
    src = 'extern "C" __global__ void broken(int* p) { p[0] = undeclared_identifier; }\n'
    with pytest.raises(cb.NvrtcError, match="undeclared_identifier"):
        cb.compile_cuda(src, "broken.cu", ["-arch=compute_80"])


def test_assemble_error_carries_log():
    ptx = cb.compile_cuda(
        'extern "C" __global__ void k(int* p) { asm volatile("bogus.instruction;"); }\n',
        "bad_asm.cu",
        ["-arch=compute_80"],
    )
    with pytest.raises(cb.NvJitLinkError, match="bogus"):
        cb.assemble(ptx, "sm_80")


def test_sm90a_ptx_rejected_for_sm80():
    f = next(f for f in cb.corpus_files() if f.sm90a_only)
    ptx = cb.compile_cached(f.source(), f.path.name, ["-arch=compute_90a", "-std=c++17"])
    with pytest.raises(cb.NvJitLinkError):
        cb.assemble(ptx, "sm_80")


def test_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setattr(cb, "CACHE_DIR", tmp_path)
    src = 'extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }\n'
    a = cb.compile_cached(src, "k.cu", ["-arch=compute_80"])
    files = list(tmp_path.glob("*.ptx"))
    assert len(files) == 1
    assert files[0].read_text() == a
    assert cb.compile_cached(src, "k.cu", ["-arch=compute_80"]) == a
    cb.compile_cached(src, "k.cu", ["-arch=compute_80", "-lineinfo"])
    assert len(list(tmp_path.glob("*.ptx"))) == 2


def test_a_tools_identity_is_its_bytes_not_its_path(tmp_path):
    """The disk cache's name for a tool (ptxas, nvJitLink, nvdisasm) is its bytes: the same
    build installed at another path (each fresh virtualenv) names the same entries, and a
    build differing in one byte does not."""
    a, b, c = tmp_path / "a" / "ptxas", tmp_path / "b" / "ptxas", tmp_path / "ptxas"
    for p, data in ((a, b"\x7fELF tool"), (b, b"\x7fELF tool"), (c, b"\x7fELF toot")):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    assert cb.tool_identity(str(a)) == cb.tool_identity(str(b))
    assert cb.tool_identity(str(a)) != cb.tool_identity(str(c))
