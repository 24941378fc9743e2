"""The rewrites that change the kernel's own control flow leave alone what they cannot
keep exact (instrument/converge.py, instrument/loops.py). Each kernel in
tests/data/control assembles natively; the rewrite once made it compute otherwise:

- inverted_two_ways_in: `@p bra L1; bra L2; L1: <copy> L2:` where another branch also
  enters L1. Converted, a lane taking that branch passed no REG_ON of ours and skipped the
  copy and the add before it (a store then wrote 0, not buf + 512).
- region_scoped_label: `@p bra L; mbarrier.init; { L: red.global ... }  L:` -- the branch
  goes to the outer L (the scoped one is another label). The region was closed at the
  scoped L, left unpredicated: every lane of a warp with no lane on ran the `red`.
- loop_scoped_label: a loop region holding a scope whose own label shares the region's
  name. The copy renamed the scope's branch to the region's label: the arrive and the
  `red` ran four times instead of once.
- loop_jump_table: a `brx.idx` inside a loop region jumps to the original region's labels:
  the lane that took it left the copy while the others voted with it in their mask.
- loop_scoped_waits: the region one lane of each warp runs holds two inline asm wait
  loops, each with its own scoped `W`. They are no other label's name, so the region is
  copied (the copy keeps the warp together after it, as natively: with the copy refused,
  `__activemask()` after the region read 1 lane, then 31, where natively it read 32).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from consan import toolchain
from instrument import converge
from instrument.rewrite import instrument

DATA = Path(__file__).resolve().parents[1] / "data" / "control"


def _lines(ptx: str, needle: str) -> list[str]:
    return [ln.strip() for ln in ptx.splitlines() if needle in ln and not
            ln.strip().startswith("//")]


def test_an_inverted_if_with_a_second_way_in_is_not_converted():
    ins = instrument((DATA / "inverted_two_ways_in.ptx").read_text(), "k.ptx")
    (add,) = _lines(ins.ptx, "add.s32 %r3, %r2, 512;")
    assert add == "add.s32 %r3, %r2, 512;"  # (not `@%__cs_on ...`)
    (copy,) = _lines(ins.ptx, "multicast::cluster [%r2]")
    assert converge.REG_ON not in copy and converge.REG_ON_OWN not in copy
    # the plain `if` before it, with one way in, still is
    assert f"not.pred {converge.REG_ON}, %p3;" in ins.ptx
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))


def test_a_region_whose_label_is_shadowed_in_a_scope_is_not_converted():
    ins = instrument((DATA / "region_scoped_label.ptx").read_text(), "k.ptx")
    assert f"not.pred {converge.REG_ON}" not in ins.ptx
    (red,) = _lines(ins.ptx, "st.global.u32 [%rd1], %r1;")
    assert red == "st.global.u32 [%rd1], %r1;"


@pytest.mark.parametrize("name", ["loop_scoped_label", "loop_jump_table"])
def test_a_loop_region_the_copy_cannot_keep_is_not_copied(name):
    ins = instrument((DATA / f"{name}.ptx").read_text(), "k.ptx")
    assert "$__cs_loop" not in ins.ptx and "__cs0:" not in ins.ptx  # (no copy, no renaming)
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))


def test_a_loop_region_with_repeated_scoped_labels_is_copied():
    ins = instrument((DATA / "loop_scoped_waits.ptx").read_text(), "k.ptx")
    assert "$__cs_loop0:" in ins.ptx
    assert len(_lines(ins.ptx, "@!p bra W;")) == 2  # the original region's waits, as written
    toolchain.link_with_checker(ins, "k", toolchain.Arch.parse("sm_90a"))
