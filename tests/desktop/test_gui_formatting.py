"""The text formats the window shares."""

from __future__ import annotations

import math

from trainlab_desktop.common.formatting import format_duration, format_offset


def test_durations():
    assert format_duration(0) == "0:00"
    assert format_duration(65.4) == "1:05"
    assert format_duration(3 * 3600 + 7 * 60 + 9) == "3:07:09"
    assert format_duration(None) == "\u2014"
    assert format_duration(math.nan, missing="\u2013") == "\u2013"
    assert format_duration(-3) == "\u2014"  # an ETA below zero is no ETA


def test_offsets_keep_their_sign():
    assert format_offset(-5) == "-0:05"
    assert format_offset(-3725) == "-1:02:05"
    assert format_offset(90) == "1:30"
