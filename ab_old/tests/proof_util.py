"""The proof before launch of one kernel of a PTX module, as the rewriter makes it
(`instrument.rewrite`), for the tests and benchmarks that call `static_proof.prove` with
their own launch values."""

from __future__ import annotations

from instrument.events import classify, constant_registers
from instrument.ptx import parse
from instrument.rewrite import _shared_symbols
from instrument.static_proof import Proof, Refusal, prove


def prove_kernel(ptx: str, kernel: str | None = None, **launch) -> Proof | Refusal:
    """`static_proof.prove` of `kernel` (else the module's only kernel) with `launch`'s
    keywords (dims, params, maps, cluster, grid)."""
    mod = parse(ptx, f"{kernel or 'k'}.ptx")
    (fn,) = [f for f in mod.functions if f.is_entry and kernel in (None, f.name)]
    shared, consts = _shared_symbols(mod), constant_registers(fn.body)
    index = {id(it): i for i, it in enumerate(mod.items)}
    return prove(fn, mod.items[index[id(fn.header)]:fn.open_index],
                 lambda it: classify(it, shared, in_entry=True, constants=consts), shared,
                 **launch)
