"""--device asks for a device this machine lacks: one line saying why, in the words the GPU panel and `trainlab doctor` use."""

from __future__ import annotations

import sys

import pytest
from fixtures import fake_nvml

from trainlab.api.errors import UsageError


def test_device_cuda_without_a_driver_says_so_in_the_panels_words(monkeypatch):
    import torch

    from trainlab.engine.device import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", "12.4")  # a CUDA build of torch, on a machine without the driver
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml.library_not_found())
    with pytest.raises(UsageError) as raised:
        resolve_device("cuda")
    # not "(no NVIDIA driver or GPU (NVMLError_LibraryNotFound: NVML Shared Library Not Found))"
    assert str(raised.value) == "--device cuda: CUDA is not available: the NVIDIA driver is not installed (NVML library not found)"
