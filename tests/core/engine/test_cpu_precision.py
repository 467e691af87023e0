"""``precision=auto`` on the CPU: bf16 where the CPU computes bfloat16 natively, fp32 where torch would emulate it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from trainlab.api.errors import UsageError
from trainlab.engine.device import cpu_has_native_bf16, resolve_precision

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "expected"),
    [(True, False, "bf16"), (False, True, "bf16"), (True, True, "bf16"), (False, False, "fp32")],
    ids=["avx512-bf16", "amx", "both", "neither"],
)
def test_auto_follows_the_cpus_bf16_instructions(monkeypatch, avx512_bf16, amx, expected):
    # torch's cpuinfo queries stand in for CPUs this machine is not
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert resolve_precision(CPU, "auto") == expected
    assert resolve_precision(CPU, "") == expected  # an empty value is auto
    # explicit choices are kept whatever the CPU: the user asked for them
    assert resolve_precision(CPU, "fp32") == "fp32"
    assert resolve_precision(CPU, "bf16") == "bf16"
    with pytest.raises(UsageError, match="fp16 needs a CUDA GPU"):
        resolve_precision(CPU, "fp16")


def test_a_torch_without_the_query_means_fp32(monkeypatch):
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported")
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    assert cpu_has_native_bf16() is False
    assert resolve_precision(CPU, "auto") == "fp32"


def _cpuinfo_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    pytest.skip("no /proc/cpuinfo flags to compare with")


def test_the_answer_matches_the_kernels_own_cpu_flags():
    """Not a fake: on this machine, torch's answer agrees with what the kernel says the CPU has."""
    flags = _cpuinfo_flags()
    assert cpu_has_native_bf16() == bool(flags & {"avx512_bf16", "amx_bf16"}), sorted(f for f in flags if "bf16" in f or "amx" in f)


@pytest.mark.long
def test_a_cpu_run_plans_the_precision_auto_chose(cli, tmp_path):
    """The real CLI, --dry-run: what a CPU run will use with the default precision, and with fp32 asked for."""
    from helpers import FIXTURE_PLUGINS, write_toy_csv

    data = write_toy_csv(tmp_path / "toy.csv", rows=60)

    def planned(*extra: str) -> str:
        done = cli("train", "toy-classification", "--data", data, "--device", "cpu", "--dry-run", "--json",
                   "--out", tmp_path / "run", *extra, extra_path=[FIXTURE_PLUGINS])  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])["precision"]

    assert planned() == ("bf16" if cpu_has_native_bf16() else "fp32")
    assert planned("--precision", "fp32") == "fp32"


def test_doctor_says_what_a_cpu_run_will_use(tmp_path):
    done = subprocess.run([sys.executable, "-m", "trainlab", "doctor"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRAINLAB_HOME": str(tmp_path / "home")})  # fmt: skip
    cpu_line = next(line for line in done.stdout.splitlines() if line.strip().startswith("CPU"))
    if cpu_has_native_bf16():
        assert "native bf16 (CPU runs train in bf16 by default)" in cpu_line, cpu_line
    else:
        assert "no native bf16 (CPU runs train in fp32)" in cpu_line, cpu_line
