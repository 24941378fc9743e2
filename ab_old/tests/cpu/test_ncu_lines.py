"""benchmarks/ncu_async.py reads an ncu source-page CSV: per function (--summary) and per
SASS line of chosen functions (--lines), the same numbers either way."""

from __future__ import annotations

from benchmarks import ncu_async

HEAD = ('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
        '"stall_wait","stall_long_sb","stall_wait (Not Issued)"\n')
CSV = ('"Kernel Name","__consan_wgmma(unsigned long, unsigned long, unsigned int, unsigned int)"\n'
       + HEAD +
       '"0x10","LDS R1, [R2]","30","64","10","20","5"\n'
       '"0x20","ISETP.NE.AND P0, PT, R1, RZ, PT","60","64","60","0","0"\n'
       '"0x30","BRA 0x50","0","0","0","0","0"\n'
       '"Kernel Name","__consan_mbar(unsigned long, unsigned int, unsigned int, unsigned int)"\n'
       + HEAD +
       '"0x40","LDG.E R3, [R4.64]","10","8","0","10","0"\n')


def test_lines_and_summary_read_the_same_rows(tmp_path, capsys):
    path = tmp_path / "ncu.csv"
    path.write_text(CSV)
    rows = list(ncu_async.sass_rows(str(path)))
    assert [(f, a, s, i) for f, a, s, i, _, _ in rows] == [
        ("__consan_wgmma", "0x10", 30, 64), ("__consan_wgmma", "0x20", 60, 64),
        ("__consan_wgmma", "0x30", 0, 0), ("__consan_mbar", "0x40", 10, 8)]
    assert rows[0][5] == {"wait": 10, "long_sb": 20}  # (not the "(Not Issued)" column)
    ncu_async.sass_lines(str(path), ["wgmma"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "#### __consan_wgmma: 90 stall samples, 128 warp instructions"
    assert len(out) == 3  # (a line that never ran is left out)
    assert out[1].split()[:3] == ["0x10", "30", "64"] and out[1].endswith("long_sb:20 wait:10 <==")
    assert out[2].split()[:3] == ["0x20", "60", "64"] and "wait:60" in out[2]
    ncu_async.summary(str(path))
    table = capsys.readouterr().out.splitlines()
    assert table[1].startswith("__consan_wgmma | 90.0 | 128 | wait 78%, long_sb 22%")
    assert table[2].startswith("__consan_mbar | 10.0 | 8 | long_sb 100%")


def test_calls_counts_each_function_by_its_first_line(tmp_path, capsys):
    head = HEAD.replace('"stall_wait","stall_long_sb"', '"stall_no_inst","stall_branch_resolving"')
    path = tmp_path / "ncu.csv"
    path.write_text(
        '"Kernel Name","__consan_tensor(unsigned long)"\n' + head +
        '"0x10","IADD3 R1, R1, -0x70, RZ","40","8","30","10","0"\n'  # entry: 8 calls
        '"0x20","LDS R2, [R1]","10","8","0","0","0"\n'
        '"0x30","@P0 BRA 0x60","50","4","0","50","0"\n'  # half the calls branch off
        '"0x40","RET.ABS.NODEC R20, 0x0","0","8","0","0","0"\n'
        '"Kernel Name","cs_cold(unsigned int)"\n' + head +
        '"0x80","IADD3 R1, R1, -0x8, RZ","0","0","0","0","0"\n')  # never called: left out
    rows = ncu_async.per_call(str(path))
    assert rows == [("__consan_tensor", 8, 28 / 8, 3, 30.0, 60.0)]
    ncu_async.calls_table(str(path))
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "__consan_tensor | 8 | 4 | 3 | 30 | 60"
