"""``trainlab doctor``: the report's facts, its verdict and the command."""

from __future__ import annotations

import json

import pytest
from fixtures import fake_nvml

from trainlab.cli import doctor

ARCHS = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


# -- the rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capability", "archs", "has", "says"),
    [
        ((8, 6), ARCHS, True, "sm_86 kernels"),
        ((8, 9), ARCHS, True, "sm_89 runs the sm_86 kernels"),  # RTX 4090: same major, lower minor
        ((12, 1), ARCHS, True, "sm_121 runs the sm_120 kernels"),
        ((9, 0), ["sm_80", "sm_90a"], True, "sm_90a kernels"),
        ((10, 0), ["sm_80", "sm_90a"], False, "not among this torch build's targets"),  # arch-specific: no forward compat
        ((12, 0), ["sm_80", "compute_90"], True, "JIT-compiles the compute_90 PTX"),
        ((3, 7), ARCHS, False, "compute capability 3.7 is not among"),  # Tesla K80 on a modern build
        ((6, 1), ARCHS, False, "install a torch build for this GPU"),
        ((8, 0), [], False, "no CUDA kernels"),
    ],
)
def test_kernel_support(capability, archs, has, says):
    result, note = doctor.kernel_support(capability, archs)
    assert result is has
    assert says in note


def test_bf16_needs_ampere():
    assert doctor.bf16_support((8, 0)) == (True, "")
    assert doctor.bf16_support((9, 0))[0] is True
    ok, reason = doctor.bf16_support((7, 5))
    assert ok is False and "7.5" in reason and "8.0" in reason


@pytest.mark.parametrize(
    ("driver", "driver_cuda", "torch_cuda", "verdict", "says"),
    [
        ("580.95.05", "13.0", "13.0", True, "supports CUDA 13.0"),
        ("590.10", "13.1", "13.0", True, "supports CUDA 13.1"),
        ("570.86.10", "12.8", "12.9", True, "minor-version compatibility"),
        ("535.183.01", "12.2", "13.0", False, "driver 580 or newer"),
        ("575.10", None, "13.0", False, "update the NVIDIA driver"),  # no CUDA version from NVML: the table decides
        ("580.65.06", None, "13.0", True, "driver 580.65.06"),
        ("580.95.05", "13.0", None, None, "no CUDA support"),
    ],
)
def test_driver_check(driver, driver_cuda, torch_cuda, verdict, says):
    ok, message = doctor.driver_check(driver, driver_cuda, torch_cuda)
    assert ok is verdict
    assert says in message


def test_version_texts():
    assert doctor.cuda_version_text(12040) == "12.4"
    assert doctor.cuda_version_text(13000) == "13.0"
    assert doctor.cudnn_version_text(8902) == "8.9.2"
    assert doctor.cudnn_version_text(91002) == "9.10.2"
    assert doctor.cudnn_version_text(None) is None


# -- the report, with a fake NVML ---------------------------------------------------------------


def test_report_with_two_gpus():
    nvml = fake_nvml.two_gpus()
    report = doctor.collect(nvml=nvml)
    json.dumps(report, allow_nan=False)  # plain JSON, nothing needing default=str
    assert nvml.initialised == 0, "NVML shut down again"
    assert report["driver"]["driver_version"] == "580.95.05" and report["driver"]["driver_cuda"] == "13.0"
    assert report["driver"]["new_enough"] is True
    rtx, a100 = report["gpus"]
    assert (rtx["name"], rtx["compute_capability"], rtx["memory_total_bytes"]) == ("NVIDIA GeForce RTX 4090", "8.9", 24 * fake_nvml.GiB)
    assert rtx["torch_kernels"] is True and rtx["bf16"] is True
    assert (a100["name"], a100["compute_capability"]) == ("NVIDIA A100-SXM4-40GB", "8.0")
    assert report["can_train"] is True and doctor.exit_code(report) == 0
    import torch

    if not torch.cuda.is_available():  # this machine: NVML (faked) sees GPUs that torch cannot
        assert rtx["torch_device"] is None and rtx["usable"] is False
        assert any("NVML sees 2 GPU(s) but torch cannot use them" in w for w in report["warnings"])
        assert report["devices"] == ["cpu"]


def test_old_driver_and_old_gpu_are_warnings_not_failures():
    k80 = fake_nvml.FakeGpu("Tesla K80", 12 * fake_nvml.GiB, "GPU-k80-0000", compute_capability=(3, 7))
    nvml = fake_nvml.FakeNvml([fake_nvml.rtx_4090(), k80], driver="535.183.01", cuda_driver=12020)
    report = doctor.collect(nvml=nvml)
    assert report["driver"]["new_enough"] is False
    old = report["gpus"][1]
    assert old["torch_kernels"] is False and old["bf16"] is False and "3.7" in old["bf16_reason"]
    text = "\n".join(report["warnings"])
    assert "NVIDIA driver too old" in text and "driver 580 or newer" in text
    assert "GPU 1 (Tesla K80): compute capability 3.7 is not among this torch build's targets" in text
    assert doctor.exit_code(report) == 0, "the CPU still trains"
    human = doctor.format_text(report)
    assert "TOO OLD" in human and "Tesla K80" in human and "torch kernels: NO" in human


@pytest.mark.parametrize(
    ("nvml", "reason"),
    [
        (fake_nvml.library_not_found(), "no NVIDIA GPU: the NVIDIA driver is not installed"),
        (fake_nvml.driver_not_loaded(), "no NVIDIA GPU: the NVIDIA driver is not loaded"),
        (fake_nvml.no_gpus(), "no NVIDIA GPU: the NVIDIA driver reports no GPU"),
    ],
)
def test_no_gpu_machine_can_train_on_the_cpu(nvml, reason):
    report = doctor.collect(nvml=nvml)
    assert report["driver"]["status"].startswith(reason)
    assert report["driver"]["new_enough"] is None
    assert report["gpus"] == []
    assert report["devices"][0] == "cpu" and report["can_train"] is True
    assert any("training runs on the CPU" in w for w in report["warnings"])
    human = doctor.format_text(report)
    assert reason in human and "Ready to train on: cpu" in human


def test_report_names_torch_plugins_offline_settings_and_folders(tmp_home):
    report = doctor.collect(nvml=fake_nvml.library_not_found())
    import torch

    assert report["torch"]["version"] == torch.__version__ and report["torch"]["cuda"] == torch.version.cuda
    assert report["torch"]["cpu_ok"] is True
    assert "image-classification" in report["tasks"]
    assert {p["name"] for p in report["plugins"]} >= {"image-classification"}
    assert report["offline"]["offline"] is True and report["offline"]["env"]["HF_HUB_OFFLINE"] == "1"
    for name in ("data", "runs", "logs", "config"):
        folder = report["folders"][name]
        assert folder["writable"] is True and folder["path"].startswith(str(tmp_home)), name
    human = doctor.format_text(report)
    for fact in ("Python", "torch", "cuDNN" if report["torch"]["cudnn"] else "torch", "Plugin", "Offline", "Folder   runs"):
        assert fact in human


def test_unwritable_data_folder_means_cannot_train(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where TRAINLAB_HOME should be a folder")
    monkeypatch.setenv("TRAINLAB_HOME", str(blocker))
    report = doctor.collect(nvml=fake_nvml.library_not_found())
    assert report["folders"]["data"]["writable"] is False
    assert any(str(blocker) in p and "not writable" in p for p in report["problems"])
    assert report["can_train"] is False and doctor.exit_code(report) == 1
    assert "This machine cannot train" in doctor.format_text(report)


def test_no_usable_task_means_cannot_train(monkeypatch):
    from trainlab.pluginhost.host import registry

    names = ",".join(p.name for p in registry(refresh=True).plugins)
    monkeypatch.setenv("TRAINLAB_BLOCK_PLUGINS", names)
    registry(refresh=True)
    report = doctor.collect(nvml=fake_nvml.library_not_found())
    assert report["tasks"] == []
    assert any("no task is available" in p for p in report["problems"])
    assert doctor.exit_code(report) == 1


def test_a_failed_plugin_is_a_warning(monkeypatch):
    from helpers import BROKEN_PLUGINS

    monkeypatch.syspath_prepend(str(BROKEN_PLUGINS))
    from trainlab.pluginhost.host import registry

    registry(refresh=True)
    report = doctor.collect(nvml=fake_nvml.library_not_found())
    failed = [p for p in report["plugins"] if p["status"] in ("failed", "incompatible")]
    assert failed, "the broken fixture plugins are discovered"
    for plugin in failed:
        assert any(w.startswith(f"plugin {plugin['name']!r} {plugin['status']}") for w in report["warnings"])
    assert doctor.exit_code(report) == 0


# -- the command ----------------------------------------------------------------------------------


def test_doctor_json_on_this_machine(cli):
    result = cli("doctor", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["can_train"] is True and "cpu" in report["devices"]
    assert isinstance(report["warnings"], list) and isinstance(report["problems"], list)
    assert report["driver"]["status"] == "ok" or report["driver"]["status"].startswith("no NVIDIA GPU: ")
    assert "Ready to train on" in result.stderr  # the human text goes to stderr with --json


def test_doctor_text_and_exit_code_when_it_cannot_train(cli, tmp_path):
    good = cli("doctor")
    assert good.returncode == 0, good.stderr
    assert "Ready to train on: cpu" in good.stdout and "torch" in good.stdout
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad = cli("doctor", "--json", env={"TRAINLAB_HOME": str(blocker)})
    assert bad.returncode == 1, bad.stderr
    assert json.loads(bad.stdout)["can_train"] is False
