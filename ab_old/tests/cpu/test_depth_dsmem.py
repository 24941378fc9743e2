"""benchmarks/depth_dsmem.py's depths, without a GPU."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.depth_dsmem import stages_list


def test_stages_are_positive_depths_and_anything_else_is_refused():
    assert stages_list("6") == [6]
    assert stages_list("2,4,6,8") == [2, 4, 6, 8]
    for bad in ("", "4,", "x", "0", "2,-1", "4.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integers"):
            stages_list(bad)


def test_tables_are_shared_device_or_both():
    from benchmarks.depth_dsmem import tables_list

    assert tables_list("shared") == ["shared"]
    assert tables_list("shared,device") == ["shared", "device"]
    for bad in ("", "smem", "shared,", "device,global"):
        with pytest.raises(argparse.ArgumentTypeError, match="shared, device"):
            tables_list(bad)
