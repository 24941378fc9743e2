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


def test_a_ptxas_error_names_the_source_line(tmp_path, monkeypatch):
    monkeypatch.setenv("CONSAN_CACHE", str(tmp_path))
    with pytest.raises(toolchain.CompileError) as e:
        runtime.build(PTX, ("-arch=sm_90a",), source_name="k.ptx")
    text = str(e.value)
    assert "/src/k.cu:7" in text and "%r99" in text, text
