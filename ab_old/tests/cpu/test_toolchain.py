"""The toolchain without a GPU: CUDA headers found for NVRTC, the checker built once.

NVRTC searches no directory unless told; consan adds one CUDA toolkit's include
folders after the user's `-I`. The device checker is compiled once per
configuration into a relocatable cubin in the on-disk cache, so a build in a
new process assembles only the user's PTX.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from consan import runtime, toolchain
from instrument import abi, probe_abi
from instrument.ptx import parse
from instrument.rewrite import instrument
from tests.kernels.cuda_headers import HEADER_KERNELS, has_header

ROOT = Path(__file__).resolve().parents[2]
SM90A = toolchain.Arch.parse("sm_90a")


@pytest.mark.parametrize("header", sorted(HEADER_KERNELS))
def test_kernel_with_cuda_header_builds(header, fresh_module_cache, monkeypatch):
    """`#include <cuda_fp16.h>` and friends compile, instrument and link for sm_90a."""
    dirs = toolchain.cuda_include_dirs()
    if not dirs:
        pytest.skip("no CUDA include directory on this machine (set CUDA_PATH to a toolkit)")
    if not has_header(header):
        pytest.skip(f"{header} is not in {', '.join(map(str, dirs))}")
    monkeypatch.setenv("CONSAN_CACHE", str(fresh_module_cache))
    b = runtime.build(HEADER_KERNELS[header].source, ("-arch=sm_90a",))
    assert b.cubin[:4] == b"\x7fELF"
    assert "k" in b.instrumented.kernels
    assert len(b.instrumented.sites) > 0


def test_include_dirs_say_where_they_come_from():
    for d in toolchain.cuda_include_dirs():
        assert os.path.isdir(d.path) and d.origin
        assert d.path in str(d) and d.origin in str(d)


def test_cuda_path_is_honoured(tmp_path, monkeypatch):
    """A toolkit at $CUDA_PATH is searched first, and its headers are the ones used."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda_runtime.h").write_text("#pragma once\n")
    (tmp_path / "include" / "only_in_this_toolkit.h").write_text("#define ONLY_HERE 42\n")
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    dirs = toolchain.cuda_include_dirs()
    assert dirs[0].path == str(tmp_path / "include") and dirs[0].origin == "$CUDA_PATH"
    ptx = toolchain.compile_cuda(
        '#include <only_in_this_toolkit.h>\n'
        'extern "C" __global__ void k(int* x) { x[0] = ONLY_HERE; }\n',
        "k.cu", ["-arch=compute_90a"])
    assert "42" in ptx


@pytest.mark.parametrize("machine, target", [("aarch64", "sbsa-linux"),
                                             ("aarch64", "aarch64-linux"),
                                             ("x86_64", "x86_64-linux")])
def test_a_toolkit_with_its_headers_under_targets_is_found(tmp_path, monkeypatch, machine,
                                                           target):
    """A conda or Arm-server toolkit keeps its headers in targets/<arch>-linux/include (an
    Arm server's is sbsa-linux); the prefix itself is searched, not a folder below it."""
    inc = tmp_path / "targets" / target / "include"
    inc.mkdir(parents=True)
    (inc / "cuda_runtime.h").write_text("#pragma once\n")
    monkeypatch.setattr(toolchain.platform, "machine", lambda: machine)
    for var in ("CUDA_PATH", "CONDA_PREFIX"):
        cands = dict(toolchain._toolkit_candidates({var: str(tmp_path)}, (), (13, 0)))
        assert str(inc) in cands[f"${var}"]
        assert not any("targets" in d.split("targets", 1)[1] for d in cands[f"${var}"]
                       if "targets" in d)  # no targets/.../targets/...


def test_user_include_dirs_come_first(tmp_path):
    """A user's -I folder wins over the toolkit's headers of the same name."""
    (tmp_path / "cuda_fp16.h").write_text("#define USERS_OWN_FP16 1\n")
    src = ('#include <cuda_fp16.h>\n#ifndef USERS_OWN_FP16\n#error toolkit header first\n'
           '#endif\nextern "C" __global__ void k(int* x) { x[0] = USERS_OWN_FP16; }\n')
    toolchain.compile_cuda(src, "k.cu", ["-arch=compute_90a", f"-I{tmp_path}"])


def test_missing_header_names_it_and_the_directories(tmp_path):
    src = '#include <no_such_header_for_consan.h>\nextern "C" __global__ void k() {}\n'
    with pytest.raises(toolchain.CompileError) as info:
        toolchain.compile_cuda(src, "k.cu", ["-arch=compute_90a", f"-I{tmp_path}"])
    msg = str(info.value)
    assert "no_such_header_for_consan.h" in msg.splitlines()[0]
    assert f"{tmp_path} (your -I)" in msg
    for d in toolchain.cuda_include_dirs():
        assert str(d) in msg
    assert "CUDA_PATH" in msg


def test_missing_header_without_any_toolkit(tmp_path, monkeypatch):
    """With no CUDA headers anywhere, the message says so rather than listing nothing."""
    monkeypatch.setattr(toolchain, "cuda_include_dirs", lambda: ())
    with pytest.raises(toolchain.CompileError) as info:
        toolchain.compile_cuda('#include <cuda_fp16.h>\n', "k.cu", ["-arch=compute_90a"])
    assert "cuda_fp16.h" in str(info.value) and "found no CUDA toolkit headers" in str(info.value)


# ------------------------------------------------------------------ the checker, built once

KERNEL_A = r"""
extern "C" __global__ void a(float* x) {
    __shared__ float s[64];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[63 - threadIdx.x];
}
"""
KERNEL_B = KERNEL_A.replace("void a(", "void b(").replace("63 -", "31 ^")

_BUILD_IN_A_NEW_PROCESS = textwrap.dedent("""
    import hashlib, json, sys
    from consan import runtime, toolchain
    compiled, linked = [], []
    nvrtc, link = toolchain._nvrtc, toolchain.link
    def traced_nvrtc(source, name, *a, **k):
        compiled.append(name)
        return nvrtc(source, name, *a, **k)
    def traced_link(modules, *a, **k):
        linked.append([n for n, _ in modules])
        return link(modules, *a, **k)
    toolchain._nvrtc, toolchain.link = traced_nvrtc, traced_link
    b = runtime.build(sys.stdin.read(), ("-arch=sm_90a",))
    print(json.dumps({"compiled": compiled, "linked": linked, "cubin": b.cubin[:4].hex()}))
""")


def _build_in_new_process(source: str, cache: Path) -> dict:
    env = {**os.environ, "CONSAN_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("CONSAN_CHECKER_DEFINES", None)
    env.pop("CONSAN_LINK_OPTIONS", None)
    out = subprocess.run([sys.executable, "-c", _BUILD_IN_A_NEW_PROCESS], input=source,
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_reuses_the_checker_object(tmp_path):
    first = _build_in_new_process(KERNEL_A, tmp_path)
    assert "consan_checker.cu" in first["compiled"]
    assert list(tmp_path.glob("checker/sm_90a-*.cubin"))
    # Another kernel (so the linked-module cache misses): NVRTC compiles only the user's
    # source, and nvJitLink gets the cached checker object, not its PTX.
    second = _build_in_new_process(KERNEL_B, tmp_path)
    assert second["compiled"] == ["kernel.cu"]
    assert second["linked"] == [["kernel.cu.ptx", "consan_checker.cubin"]]
    assert second["cubin"] == b"\x7fELF".hex()


CONCURRENT_BUILD = """
import sys, time
from consan import toolchain

def fake_nvrtc(*args, **kwargs):  # (NVRTC's 10-30 s, as a sleep, counted in a file)
    with open(sys.argv[1], "a") as f:
        f.write("built\\n")
    time.sleep(1.0)
    return b"\\x7fELF checker"

toolchain._nvrtc = fake_nvrtc
assert toolchain.checker_object(toolchain.Arch.parse("sm_90a")) == b"\\x7fELF checker"
"""


def test_processes_that_need_one_checker_build_at_once_build_it_once(tmp_path):
    """pytest-xdist workers (or a program's processes) asking for the same checker build
    together: one builds it, the others wait for it and read it from the cache."""
    env = {**os.environ, "CONSAN_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    count = tmp_path / "builds.txt"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_BUILD, str(count)], env=env)
             for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    assert count.read_text() == "built\n"


def test_every_configuration_has_its_own_cache_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("CONSAN_CACHE", str(tmp_path))
    monkeypatch.delenv("CONSAN_CHECKER_DEFINES", raising=False)
    paths = {toolchain.checker_cache_path(SM90A, toolchain._variant_defines(*build), cap, out)
             for build in ((False, False, False), (True, False, False), (False, True, False),
                           (False, False, True), (False, False, False, True),
                           (False, False, False, False, True), (False, True, False, False, True))
             for cap in (0, 64, 128) for out in ("cubin", "ptx")}
    paths.add(toolchain.checker_cache_path(toolchain.Arch.parse("sm_80"), (), 0))
    monkeypatch.setenv("CONSAN_CHECKER_DEFINES", "CONSAN_PROFILE")
    paths.add(toolchain.checker_cache_path(SM90A, toolchain._variant_defines(False, False), 0))
    assert len(paths) == 7 * 3 * 2 + 2
    assert all(p.parent == tmp_path / "checker" for p in paths)


NAMED_BARRIER = KERNEL_A.replace("__syncthreads();", 'asm volatile("bar.sync 1, 64;");')


@pytest.mark.parametrize("source,phase", [(KERNEL_A, True), (NAMED_BARRIER, False)],
                         ids=["cta-barriers-only", "named-barrier"])
def test_device_tables_link_the_checker_build_of_the_modules_mode(monkeypatch, tmp_path,
                                                                  source, phase):
    """With its tables in device memory a module links the build for its mode alone
    (-DCONSAN_PHASE_DEV for phases, the default for vector clocks). (The user's cache:
    which build is asked for does not depend on what is cached, and a fresh cache made
    this test compile two checker builds, 9 to 18 s on the 2-core machine.)"""
    seen, real = [], toolchain.checker_object

    def spy(arch, psh=False, vsh=False, cap=0, phase=False, mc=False, chunk=False):
        seen.append((psh, vsh, phase))
        assert not chunk  # (4-byte accesses: 4-byte granules)
        return real(arch, psh, vsh, cap, phase, mc, chunk)

    monkeypatch.setattr(toolchain, "checker_object", spy)
    ins = instrument(parse(toolchain.compile_cuda(source, "k.cu", ["-arch=compute_90a"]),
                           "k.ptx"))
    assert ins.phase_mode is phase
    assert toolchain.link_with_checker(ins, "k.ptx", SM90A)[:4] == b"\x7fELF"
    assert seen == [(False, False, phase)]
    assert toolchain.link_with_checker(ins, "k.ptx", SM90A, vsh=not phase, psh=phase)
    assert seen[1] == (phase, not phase, False)


def test_checker_object_links_to_the_same_bytes_as_its_ptx(monkeypatch, tmp_path):
    """The cached object is built as nvJitLink would assemble the checker's PTX, register
    cap included: the linked module is byte for byte the same (whether the object was
    built now or read from the user's cache: its key covers the header and the cap)."""
    ptx = toolchain.compile_cuda(KERNEL_A, "a.cu", ["-arch=compute_90a", "-lineinfo"])
    ins = instrument(parse(ptx, "a.ptx"))
    via_object = toolchain.link_with_checker(ins, "a.ptx", SM90A, psh=True, max_regs=64)
    via_ptx = toolchain.link([("a.ptx", ins.ptx),
                              ("consan_checker.ptx", toolchain.checker_ptx(SM90A, psh=True))],
                             SM90A, ("-maxrregcount=64",))
    assert via_object == via_ptx


def _code_sections(cubin: bytes) -> dict[str, bytes]:
    """The `.text.*` sections (each function's machine code) of an ELF cubin, by name."""
    import struct

    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    size, count, names = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * size) for i in range(count)]
    table = heads[names][4]
    out = {}
    for name_at, _, _, _, at, n, *_ in heads:
        name = cubin[table + name_at:cubin.index(b"\0", table + name_at)].decode()
        if name.startswith(".text."):
            out[name] = cubin[at:at + n]
    return out


def test_a_module_of_several_functions_assembles_them_at_once_to_the_same_code():
    """ptxas assembles the functions of a module that defines several on every core at once
    (toolchain.split_options): each function's machine code is what one core makes."""
    from tests import corpus_build

    (ptx,) = [p for v, p in corpus_build.corpus_modules() if v.label == "cluster/compute_90a/G"]
    ins = instrument(parse(ptx, "cluster.ptx"))
    assert toolchain.split_options(ins.ptx)
    how = runtime.first_link(ins, 256)
    split = toolchain.link_with_checker(ins, "cluster.ptx", SM90A, **how)
    assert not how.get("psh") and not how.get("max_regs")  # (the device-memory tables' build)
    obj = toolchain.checker_object(SM90A, vsh=how["vsh"], mc=ins.multicast,
                                   chunk=ins.chunk_granules)
    ptx = probe_abi.declare(ins.ptx, toolchain.probe_preserve(ins.multicast))
    one = toolchain.link([("cluster.ptx", ptx), ("consan_checker.cubin", obj)], SM90A)
    code = _code_sections(split)
    assert len([n for n in code if not n.startswith(".text.__consan")]) > 1, sorted(code)
    assert code == _code_sections(one)
    # (a module of one function is assembled as before)
    assert not toolchain.split_options(".visible .entry k()\n{\n\tret;\n}\n")


PEER_LOAD = r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) peer_load(float* o) {
    __shared__ float s[32];
    unsigned r, p, a = (unsigned)__cvta_generic_to_shared(&s[threadIdx.x]);
    float v;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    s[threadIdx.x] = threadIdx.x;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(p) : "r"(a), "r"(r ^ 1u));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(p) : "memory");
    o[threadIdx.x] = v;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
"""


@pytest.mark.parametrize("case", ["copies-and-mbarriers", "peer-load"])
def test_a_cluster_module_keeps_its_tables_in_shared_memory_unless_a_peer_loads_them(case):
    """The clustered ring (st.async into the peer, arrives on its mbarriers) links the
    shared-memory tables' build with the mailboxes (-DCONSAN_VSH -DCONSAN_MC); a module whose
    warps load a peer's bytes keeps the device-memory tables, which hold a peer's epochs."""
    from tests.kernels import dsmem_ring

    src = dsmem_ring.SOURCE if case == "copies-and-mbarriers" else PEER_LOAD
    ins = instrument(parse(toolchain.compile_cuda(src, "k.cu", ["-arch=compute_90a"]), "k.ptx"))
    assert ins.multicast
    assert ins.peer_access is (case == "peer-load")
    want = runtime.Placement.DEVICE if ins.peer_access else runtime.Placement.VC_SMEM
    assert runtime.first_placement(ins) is want
    assert runtime.first_link(ins, 256) == {"vsh": want is runtime.Placement.VC_SMEM}
    defines = toolchain._variant_defines(False, want is runtime.Placement.VC_SMEM, mc=True)
    assert "-DCONSAN_MC" in defines


def test_probes_of_the_mailbox_build_preserve_what_the_modules_declarations_say(monkeypatch):
    """A module that reaches peer CTAs links the mailbox build, whose probes preserve
    abi.MAILBOX_PRESERVE registers (.abi_preserve): the module's declarations say the same
    (a declaration saying more than the build preserves links silently, and the kernel's
    registers would not survive a call). The link itself refuses the other mismatch, so a
    module linked here also proves the build carries the directive."""
    from tests import corpus_build

    monkeypatch.delenv("CONSAN_ABI_PRESERVE", raising=False)
    (ptx,) = [p for v, p in corpus_build.corpus_modules() if v.label == "cluster/compute_90a/G"]
    ins = instrument(parse(ptx, "cluster.ptx"))
    assert ins.multicast
    linked, real = [], toolchain.link

    def spy(modules, arch, options=()):
        linked.append(modules[0][1])
        return real(modules, arch, options)

    monkeypatch.setattr(toolchain, "link", spy)
    assert toolchain.link_with_checker(ins, "cluster.ptx", SM90A)[:4] == b"\x7fELF"
    decls = [ln for ln in linked[0].splitlines() if ln.startswith(".extern .func")]
    assert decls and all(ln.endswith(f" .abi_preserve {abi.MAILBOX_PRESERVE};") for ln in decls)
    assert f"-DCONSAN_ABI_PRESERVE={abi.MAILBOX_PRESERVE}" in toolchain._variant_defines(
        False, False, mc=True)
    # every other build keeps PTX's default convention, and its modules' declarations too
    for build in ((True, False, False), (False, True, False), (False, False, True),
                  (False, False, False)):
        assert not any("ABI_PRESERVE" in d for d in toolchain._variant_defines(*build))
    assert toolchain.probe_preserve(False) == 0  # (link_with_checker leaves their PTX as is)
    # the measurement switch sets every build's (both sides still from one place), and a
    # module linked under it is cached apart
    from consan import pipeline

    before = pipeline.link_key(ins, SM90A, False, 0, False, ())
    monkeypatch.setenv("CONSAN_ABI_PRESERVE", "24")
    assert pipeline.link_key(ins, SM90A, False, 0, False, ()) != before
    assert toolchain.probe_preserve(False) == toolchain.probe_preserve(True) == 24
    assert "-DCONSAN_ABI_PRESERVE=24" in toolchain._variant_defines(False, True)
    monkeypatch.setenv("CONSAN_ABI_PRESERVE", "0")
    assert not any("ABI_PRESERVE" in d for d in toolchain._variant_defines(False, False, mc=True))
    monkeypatch.setenv("CONSAN_ABI_PRESERVE", "many")
    with pytest.raises(ValueError, match="CONSAN_ABI_PRESERVE='many'"):
        toolchain.probe_preserve(True)
