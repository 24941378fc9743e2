"""The runtime's launch decisions that need no GPU to judge."""

from __future__ import annotations

import pytest


def test_a_launch_without_room_for_the_checker_says_how_much_it_needs():
    from consan.errors import ConsanError
    from consan.runtime import check_shared_room

    room = 227 * 1024
    check_shared_room("k", 1024, room - 1024 - 1600, room - 1024, room)  # just fits
    with pytest.raises(ConsanError) as e:
        check_shared_room("k", 1024, room - 1024, room - 1024 + 1568, room)
    msg = str(e.value)
    assert "kernel k uses 232448 bytes of shared memory (1024 static, 231424 dynamic)" in msg
    assert "the checker needs 1568 more" in msg
    assert "at most 229856 bytes of dynamic shared memory" in msg
