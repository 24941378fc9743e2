"""A module ptxas rejects names the user's line, whichever front end built it: the
runtime's build (used by `consan run`, the pytest plugin and the Python API) explains
nvJitLink's log in terms of the kernel's source, never of consan's rewrite."""

from __future__ import annotations

import pytest

from consan import pipeline, runtime, toolchain

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
def test_a_ptxas_error_names_the_source_line(cubin):
    """Whichever checker build the runtime links it with (when it first asks for one)."""
    b = runtime.build(PTX, ("-arch=sm_90a",), source_name="k.ptx")
    with pytest.raises(toolchain.CompileError) as e:
        b.linked(**{"cubin": {}, "psh": {"psh": True, "max_regs": 40}, "vsh": {"vsh": True}}[cubin])
    text = str(e.value)
    assert "/src/k.cu:7" in text and "%r99" in text, text


def test_a_build_links_nothing_until_asked(monkeypatch):
    """A kernel proven before launch runs natively: its build is parsed and instrumented,
    never linked; the runtime links the one checker build a checked launch needs, once."""
    linked = []
    real = pipeline._linked
    monkeypatch.setattr(pipeline, "_linked", lambda *a, **k: linked.append(a[3:]) or real(*a))
    b = runtime.build(PTX.replace("%r99", "%r1"), ("-arch=sm_90a",), source_name="k.ptx")
    assert linked == []
    vsh = b.linked(vsh=True)
    assert vsh[:4] == b"\x7fELF" and b.linked(vsh=True) is vsh and linked == [(False, 0, True)]
