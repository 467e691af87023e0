"""A weights file that is not safetensors at all, reached through a symlink: the message names both, in words."""

from __future__ import annotations

import os
import re

import pytest

from trainlab.system.fileio import DamagedFileError, verify_safetensors


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_a_symlinked_weights_file_that_is_not_safetensors_names_the_link_and_its_target(tmp_path):
    target = tmp_path / "store" / "weights.bin"
    target.parent.mkdir()
    target.write_bytes(b"this file holds text, not tensors\n" * 4)
    link = tmp_path / "model" / "model.safetensors"
    link.parent.mkdir()
    link.symlink_to(target)
    with pytest.raises(DamagedFileError) as err:
        verify_safetensors(link)
    message = str(err.value)
    assert str(link) in message and str(target) in message and "not a safetensors file" in message
    assert "b'this fil'" in message  # what it starts with, as bytes
    assert not re.search(r"\d{9,}", message.replace(str(tmp_path), ""))  # never its first bytes read as a number
