"""An image table that lists a device, a FIFO or a folder: skipped as what it is, never opened."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures.images.imagedata import shapes_table, write_table
from trainlab_plugins.image.folder import ScanResult
from trainlab_plugins.image.table import MISSING_FILE, NOT_A_FILE, read_table


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX devices and FIFOs")
def test_a_device_a_fifo_and_a_folder_in_a_table_are_skipped_as_not_files(tmp_path):
    table = shapes_table(tmp_path, classes=2, per_class=3)
    rows = [line.split(",") for line in table.read_text(encoding="utf-8").splitlines()[1:]]
    os.mkfifo(tmp_path / "pipe.jpg")  # opening it would wait for a writer forever
    rows += [["/dev/zero", "circle"], ["pipe.jpg", "circle"], ["img", "square"], ["gone.jpg", "square"]]
    write_table(table, ["image", "label"], rows)
    result = ScanResult()
    listed = read_table(table, "image", "label", result)
    assert len(listed) == 6
    assert result.skipped == {NOT_A_FILE: 3, MISSING_FILE: 1}
    named = {where.rsplit(": ", 1)[1]: why for where, why in result.skipped_examples}
    assert named["/dev/zero"] == NOT_A_FILE and named[str(tmp_path / "pipe.jpg")] == NOT_A_FILE
    assert named[str(tmp_path / "gone.jpg")] == MISSING_FILE
