"""benchmarks/breakdown_async.py --spin: its table from the children's times, without a GPU."""

from __future__ import annotations

from benchmarks import breakdown_async as ba


def _children(times: dict[str, dict[str, float]], findings: dict[str, int] | None = None):
    """A fake child runner: each configuration's (its define's) time a kernel, in ms."""
    def run(names: list[str], defines: str) -> str:
        kind = defines.split("=")[0].replace("CONSAN_SPIN_", "") if defines else ""
        return "".join(f"SPIN {n} {times[kind][n]} {(findings or {}).get(kind, 0)}\n"
                       for n in names if n in times[kind])
    return run


def test_added_time_reads_as_calls_on_the_critical_path(capsys):
    # 2000 cycles at 2 GHz = 1 us a call: 16 us more is 16 calls
    times = {"": {"ring": 0.200}, "TENSOR": {"ring": 0.208}, "WAIT": {"ring": 0.216}}
    rc = ba.spin(["ring"], 2000, ["TENSOR", "WAIT"], run_child=_children(times), khz=2_000_000)
    out = capsys.readouterr().out
    assert rc == 0
    assert "ring | none (full) | 0.2000 | - | -" in out
    assert "ring | tensor load's look | 0.2080 | 8.0 | 8.0" in out
    assert "ring | successful wait | 0.2160 | 16.0 | 16.0" in out
    assert "wgmma" not in out  # (a kind not asked for builds no checker)


def test_a_finding_or_a_missing_time_fails_the_table(capsys):
    times = {"": {"ring": 0.2, "gemm": 0.3}, "MBAR": {"ring": 0.21, "gemm": 0.3},
             "BAR": {"ring": 0.2}}
    rc = ba.spin(["ring", "gemm"], 2000, ["MBAR", "BAR"],
                 run_child=_children(times, {"MBAR": 2}), khz=2_000_000)
    out = capsys.readouterr().out
    assert rc == 1
    assert "ring | mbarrier op (not a wait) | 0.2100 | ERROR: 2 findings on a clean kernel" in out
    assert "- | CTA barrier arrival | failed: SPIN ring 0.2 0" in out


def test_a_rank_spins_alone(capsys):
    """--rank R: each lengthened build also names the cluster rank whose CTAs spin."""
    seen = []

    def run(names, defines):
        seen.append(defines)
        return "".join(f"SPIN {n} 0.2 0\n" for n in names)

    assert ba.spin(["ring"], 2000, ["MBAR"], run_child=run, khz=2_000_000, rank=1) == 0
    assert seen == ["", "CONSAN_SPIN_MBAR=2000 CONSAN_SPIN_RANK=1"]
