"""A module ptxas rejects names the user's line, whichever front end built it: the
runtime's build (used by `consan run`, the pytest plugin and the Python API) explains
nvJitLink's log in terms of the kernel's source, never of consan's rewrite."""

from __future__ import annotations

import pytest

from consan import runtime, toolchain

PTX = """.version 8.0
.target sm_90a
.address_size 64
.file 1 "/src/k.cu"
.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<4>;
\t.loc 1 5 3
\tld.shared.u32 %r1, [%r2];
\t.loc 1 7 9
\tadd.s32 %r3, %r99, 1;
\tst.shared.u32 [%r2], %r3;
\tret;
}
"""


@pytest.mark.parametrize("cubin", ["cubin", "psh", "vsh"])
def test_a_ptxas_error_names_the_source_line(tmp_path, monkeypatch, cubin):
    """Whichever checker build the runtime links it with (when it first asks for one)."""
    monkeypatch.setenv("CONSAN_CACHE", str(tmp_path))
    b = runtime.build(PTX, ("-arch=sm_90a",), source_name="k.ptx")
    with pytest.raises(toolchain.CompileError) as e:
        {"cubin": lambda: b.cubin, "psh": lambda: b.psh_cubin(40), "vsh": b.vsh_cubin}[cubin]()
    text = str(e.value)
    assert "/src/k.cu:7" in text and "%r99" in text, text


def test_a_build_links_nothing_until_asked(tmp_path, monkeypatch):
    """A kernel proven before launch runs natively: its build is parsed and instrumented,
    never linked; the runtime links the one checker build a checked launch needs."""
    monkeypatch.setenv("CONSAN_CACHE", str(tmp_path))
    good = PTX.replace("%r99", "%r1")
    b = runtime.build(good, ("-arch=sm_90a",), source_name="k.ptx")
    assert not list(tmp_path.glob("*.cubin"))
    vsh = b.vsh_cubin()
    assert vsh[:4] == b"\x7fELF" and len(list(tmp_path.glob("*.cubin"))) == 1
    assert b.vsh_cubin() is vsh and b.cubin != vsh and len(list(tmp_path.glob("*.cubin"))) == 2
