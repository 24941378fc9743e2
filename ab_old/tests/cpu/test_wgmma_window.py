"""No probe call while a wgmma group may be in flight, where the chain allows it
(instrument/wgmma_window.py). These tests walk the instrumented PTX of every wgmma module
we have and hold the rule: from an mma_async to the `wgmma.wait_group 0` after its commit,
no `call`; and a `wgmma.fence` between any call and the next mma_async.
"""

from __future__ import annotations

import re

import pytest

from instrument import abi
from instrument.ptx import parse
from instrument.rewrite import instrument
from tests import corpus_build
from tests.probe_calls import args_of

TRITON = corpus_build.CORPUS_DIR / "triton"
HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"


def _violations(ptx: str) -> list[str]:
    """Lines of the rule broken in instrumented PTX (straight-line reading, which is how
    the rewriter places everything: a chain never spans a branch target)."""
    bad, in_flight, committed, fenced = [], False, False, True
    for n, raw in enumerate(ptx.splitlines(), 1):
        line = raw.strip()
        if line.startswith("wgmma.mma_async") or re.match(r"@\S+\s+wgmma\.mma_async", line):
            if not fenced:
                bad.append(f"line {n}: mma_async after a call with no wgmma.fence between")
            in_flight, committed = True, False
        elif "wgmma.commit_group" in line:
            committed = True
        elif re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", line) and committed:
            in_flight = False
        elif "wgmma.fence" in line:
            fenced = True
        elif re.match(r"(@\S+\s+)?call\b", line):
            fenced = False
            if in_flight:
                bad.append(f"line {n}: call while a wgmma group may be in flight")
    return bad


def _modules() -> list[tuple[str, str]]:
    mods = [(p.name, p.read_text()) for p in sorted(TRITON.glob("triton_matmul_*.ptx"))]
    f = next(f for f in corpus_build.corpus_files() if f.stem == "wgmma")
    mods.append(("wgmma.cu", corpus_build.compile_cached(
        f.source(), "wgmma.cu", ["-arch=compute_90a", "-std=c++17", "-lineinfo"])))
    return mods


@pytest.mark.parametrize("name,ptx", _modules(), ids=lambda v: v if v.endswith(
    (".ptx", ".cu")) else "")
def test_no_call_inside_a_wgmma_window(name, ptx):
    ins = instrument(parse(ptx, name))
    assert ins.wgmma
    assert _violations(ins.ptx) == []
    # and the original module, read the same way, does have calls to make: the check bites
    # (every mma_async probed: alone, or one of a chain's four in one call)
    assert ins.ptx.count("call __consan_wgmma,") + 4 * ins.ptx.count(
        "call __consan_wgmma4,") == ins.counts["async.wgmma"]


def test_the_check_catches_a_call_in_flight():
    ptx = ("wgmma.fence.sync.aligned;\nwgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
           "{%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;\ncall foo;\nwgmma.commit_group.sync.aligned;\n")
    assert _violations(ptx) == ["line 3: call while a wgmma group may be in flight"]
    after = "wgmma.wait_group.sync.aligned 0;\ncall foo;\n" \
            "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1}, %rd1, %rd2, 1, 1, 1, 0, 0;\n"
    assert _violations(ptx.replace("call foo;\n", "") + after) == [
        "line 6: mma_async after a call with no wgmma.fence between"]


MMA = ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd1, %rd2, "
       "1, 1, 1, 0, 0;\n")
KERNEL = (HEADER + ".visible .entry k()\n{\n\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<4>;\n"
          "\t.reg .f32 %f<8>;\n\t.reg .pred %p<2>;\n{body}\tret;\n}}\n")


def _kernel(body: str) -> str:
    return KERNEL.replace("{body}", body).replace("}}", "}")


def test_the_chain_probes_follow_the_commit_and_our_drain():
    ins = instrument(_kernel("\twgmma.fence.sync.aligned;\n\t" + MMA + "\t" + MMA +
                             "\twgmma.commit_group.sync.aligned;\n"
                             "\twgmma.wait_group.sync.aligned 1;\n"
                             "\tst.shared.u32 [%r1], %r2;\n"
                             "\twgmma.wait_group.sync.aligned 0;\n"))
    out = ins.ptx
    commit = out.index("wgmma.commit_group.sync.aligned;")
    drain = out.index("wgmma.wait_group.sync.aligned 0;", commit)
    calls = [m.start() for m in re.finditer(r"call __consan_wgmma\b", out)]
    group = out.index("call __consan_wgmma_group", commit)
    assert len(calls) == 2 and drain < calls[0] < calls[1] < group
    assert _violations(out) == []
    # the kernel's own wait 1 is still probed (with its N): the model judges it, not ours
    own = out.index("wgmma.wait_group.sync.aligned 1;")
    assert args_of(out[own:own + 400], abi.PROBE_WGMMA_GROUP)[0][1] == "1"


@pytest.mark.parametrize("body", [
    "\twgmma.fence.sync.aligned;\n\t" + MMA + "\tst.shared.u32 [%r1], %r2;\n\t" +
    "wgmma.commit_group.sync.aligned;\n",
    "\twgmma.fence.sync.aligned;\n$L1:\n\t" + MMA + "\t@%p1 bra $L1;\n"
    "\twgmma.commit_group.sync.aligned;\n",
    "\twgmma.fence.sync.aligned;\n\t" + MMA + "$L2:\n\t" + MMA +
    "\twgmma.commit_group.sync.aligned;\n\t@%p1 bra $L2;\n",
    "\twgmma.fence.sync.aligned;\n\t" + MMA,
    "\twgmma.fence.sync.aligned;\n\t@%p1 " + MMA + "\twgmma.commit_group.sync.aligned;\n",
    # (a label reached only through a brx.idx table)
    "\twgmma.fence.sync.aligned;\n\t" + MMA + "$L2:\n\t" + MMA +
    "\twgmma.commit_group.sync.aligned;\nts: .branchtargets $L2, $L3;\n$L3:\n\t"
    "brx.idx %r1, ts;\n",
    "\twgmma.fence.sync.aligned;\n\t" + MMA + "\t@%p1 wgmma.commit_group.sync.aligned;\n",
], ids=["probe-inside", "loop-inside", "branch-target", "no-commit", "predicated",
        "indirect-target", "predicated-commit"])
def test_a_chain_the_deferral_cannot_keep_exact_keeps_its_probes_in_place(body):
    out = instrument(_kernel(body)).ptx
    mma = out.index("wgmma.mma_async")
    assert out.rindex("call __consan_wgmma,", 0, mma) < mma  # probed before it, as before
    assert "%__cs_wd" not in out and "wgmma.wait_group.sync.aligned 0;" not in out
