"""Registers that may hold another CTA's shared-memory address.

`mapa` turns a shared address of this CTA into the same offset in a peer CTA of the
cluster. consan checks only the CTA's own shared memory and mbarriers: an mbarrier
operation whose address comes from `mapa` (directly, or through moves, additions and
conversions) acts on a peer's mbarrier, and the not-modelled list must say so even
though its `.shared::cluster` form is also used, and checked, on the CTA's own mbarriers.
"""

from __future__ import annotations

from collections.abc import Iterable

from .ptx import REGISTER, Item

# Instructions through which an address keeps pointing into the same CTA's window.
_CARRIERS = ("mov", "add", "sub", "cvt", "cvta", "and", "or")


def registers(body: Iterable[Item]) -> set[str]:
    """Destination registers of `mapa` to another rank than the CTA's own in one function
    body, and those computed from them by `_CARRIERS` (to a fixed point: a loop may carry
    the address around)."""
    defs: list[tuple[str, str, list[str]]] = []  # (opcode root, destination, sources)
    for it in body:
        if not it.is_instruction or not it.operands:
            continue
        dest, *srcs = it.operands
        regs = [r for s in srcs for r in REGISTER.findall(s)]
        defs.append((it.op_parts[0], dest.strip(), regs))
    # `mapa a, b, %cluster_ctarank` maps this CTA's address onto itself (a .shared::cluster
    # address of its own, as st.async and cluster-scope arrives take): not a peer's.
    own = {"%cluster_ctarank"} | {d for op, d, srcs in defs
                                  if op == "mov" and srcs == ["%cluster_ctarank"]}
    remote = {d for op, d, srcs in defs if op == "mapa" and not (srcs[1:2] and
                                                                  srcs[1] in own)}
    grew = True
    while grew:
        grew = False
        for op, d, srcs in defs:
            if op in _CARRIERS and d not in remote and any(s in remote for s in srcs):
                remote.add(d)
                grew = True
    return remote


def address_register(address: str | None) -> str | None:
    """The register at the base of an address operand (`%r5+8` -> `%r5`), if any."""
    if not address:
        return None
    found = REGISTER.findall(address)
    return found[0] if found else None
