"""``trainlab doctor``: can this machine train, and on what?

``collect()`` gathers Python, torch (the CUDA version it was built for,
cuDNN), the NVIDIA driver (and whether it is new enough for this torch build),
each GPU (name, memory, compute capability, whether this torch build has
kernels for it, bfloat16), the plugins, the offline settings and whether
TrainLab's folders are writable.  ``exit_code()`` is 0 when the machine can
train (the CPU counts) and 1 when it cannot; ``format_text()`` is the human
version.  Everything in the report is plain JSON.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import tempfile
import warnings as warnings_module
from pathlib import Path
from typing import Any

import trainlab
from trainlab.engine.device import cpu_has_native_bf16
from trainlab.pluginhost.host import registry
from trainlab.pluginhost.status import NOT_LOADED
from trainlab.system import paths
from trainlab.telemetry import NO_GPU, import_nvml, init_failure_reason

GiB = 1024**3
LOW_DISK_BYTES = 2 * GiB

# Oldest driver (major version) of each CUDA major release, Linux and Windows
# alike; within a major, newer toolkits run on it through minor-version
# compatibility (docs.nvidia.com/deploy/cuda-compatibility, table 1).
MIN_DRIVER_FOR_CUDA = {11: 450, 12: 525, 13: 580}


# -- small pure helpers (tested directly) --------------------------------------------------


def cuda_version_text(value: int | None) -> str | None:
    """NVML's 12040 -> "12.4"."""
    if not value:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def cudnn_version_text(value: int | None) -> str | None:
    """torch.backends.cudnn.version(): 8902 -> "8.9.2", 90100 -> "9.1.0"."""
    if not value:
        return None
    if value >= 90000:  # cuDNN 9 changed the encoding to MAJOR*10000 + MINOR*100 + PATCH
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"


def _major_minor(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def driver_check(driver_version: str | None, driver_cuda: str | None, torch_cuda: str | None) -> tuple[bool | None, str]:
    """Is the driver new enough for this torch build?  (verdict or None, why)."""
    if torch_cuda is None:
        return None, "this torch build has no CUDA support"
    need = _major_minor(torch_cuda)
    have = _major_minor(driver_cuda)
    if need is None:
        return None, f"cannot read torch's CUDA version {torch_cuda!r}"
    minimum = MIN_DRIVER_FOR_CUDA.get(need[0])
    needs_text = f"this torch build uses CUDA {torch_cuda}" + (f" (driver {minimum} or newer)" if minimum else "")
    if have is None:
        driver_major = _major_minor(driver_version)
        if driver_major is None or minimum is None:
            return None, f"driver {driver_version or 'unknown'}; {needs_text}"
        ok = driver_major[0] >= minimum
        return ok, f"driver {driver_version}; {needs_text}" + ("" if ok else ": update the NVIDIA driver")
    if have >= need:
        return True, f"driver {driver_version} supports CUDA {driver_cuda}; {needs_text}"
    if have[0] == need[0] and need[0] >= 11:
        return True, (
            f"driver {driver_version} supports CUDA {driver_cuda}; {needs_text}: runs through CUDA "
            "minor-version compatibility (a driver update is still recommended)"
        )
    return False, f"driver {driver_version} supports CUDA {driver_cuda} only; {needs_text}: update the NVIDIA driver"


def kernel_support(capability: tuple[int, int], arch_list: list[str]) -> tuple[bool, str]:
    """Does a torch build with ``arch_list`` have kernels for this compute capability?

    A cubin for sm_XY runs on X.Z for Z >= Y (same major), except the
    arch-specific ``sm_XYa``; PTX (``compute_XY``) is JIT-compiled for any
    later GPU.  (CUDA C Programming Guide, "Binary compatibility".)
    """
    if not arch_list:
        return False, "this torch build has no CUDA kernels"
    major, minor = capability
    wanted = f"sm_{major}{minor}"
    cubins, ptx = [], []
    for arch in arch_list:
        match = re.match(r"^(sm|compute)_(\d+)(\d)([a-z]?)$", arch)
        if not match:
            continue
        kind, arch_major, arch_minor, suffix = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if kind == "sm":
            if (arch_major, arch_minor) == (major, minor):
                return True, f"{arch} kernels"
            if suffix != "a" and arch_major == major and arch_minor < minor:
                cubins.append(arch)
        elif (arch_major, arch_minor) <= (major, minor) and suffix != "a":
            ptx.append(arch)
    if cubins:
        return True, f"{wanted} runs the {cubins[-1]} kernels (binary compatible)"
    if ptx:
        return True, f"{wanted} JIT-compiles the {ptx[-1]} PTX (slow first start)"
    return False, (
        f"compute capability {major}.{minor} is not among this torch build's targets "
        f"({', '.join(arch_list)}); install a torch build for this GPU"
    )


def bf16_support(capability: tuple[int, int]) -> tuple[bool, str]:
    if capability >= (8, 0):
        return True, ""
    return False, f"compute capability {capability[0]}.{capability[1]} is older than 8.0 (Ampere): no bfloat16; fp16 is used"


# -- the parts of the report ---------------------------------------------------------------


def _python() -> dict[str, Any]:
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
    }


def _cpu() -> dict[str, Any]:
    import psutil

    return {
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "ram_total_bytes": int(psutil.virtual_memory().total),
        "ram_available_bytes": int(psutil.virtual_memory().available),
    }


def _torch(problems: list[str], warnings: list[str]) -> tuple[dict[str, Any], Any]:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - a broken install is what doctor is for
        problems.append(f"torch cannot be imported: {type(exc).__name__}: {exc}")
        return {"version": None, "error": f"{type(exc).__name__}: {exc}"}, None
    info: dict[str, Any] = {
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": None,
        "arch_list": [],
        "cuda_available": False,
        "cuda_devices": [],
        "cuda_error": "",
        "mps_available": False,
        "threads": torch.get_num_threads(),
        "cpu_ok": False,
    }
    try:
        # The cheapest proof that training can run: a forward and a backward.
        weight = torch.ones(4, 4, requires_grad=True)
        (weight @ torch.ones(4, 1)).sum().backward()
        info["cpu_ok"] = bool(weight.grad is not None and float(weight.grad.sum()) == 16.0)
    except Exception as exc:  # noqa: BLE001
        info["cpu_error"] = f"{type(exc).__name__}: {exc}"
    if not info["cpu_ok"]:
        problems.append(f"torch cannot compute on the CPU ({info.get('cpu_error', 'wrong result')})")

    # what precision=auto gives a CPU run (docs/engine.md)
    info["cpu_bf16"] = cpu_has_native_bf16()
    try:
        if torch.backends.cudnn.is_available():
            info["cudnn"] = cudnn_version_text(torch.backends.cudnn.version())
    except Exception:  # noqa: BLE001 - cuDNN missing from a CUDA build
        pass
    if torch.version.cuda is not None:
        info["arch_list"] = list(torch.cuda.get_arch_list())
        try:
            # torch explains a failed CUDA start (driver too old, no device)
            # only as a warning: keep its words for the report.
            with warnings_module.catch_warnings(record=True) as caught:
                warnings_module.simplefilter("always")
                info["cuda_available"] = bool(torch.cuda.is_available())
            said = "; ".join(str(w.message).strip() for w in caught)
            if said and not info["cuda_available"]:
                info["cuda_error"] = said
            if info["cuda_available"]:
                for i in range(torch.cuda.device_count()):
                    props = torch.cuda.get_device_properties(i)
                    uuid = getattr(props, "uuid", None)
                    info["cuda_devices"].append(
                        {
                            "device": f"cuda:{i}",
                            "name": props.name,
                            "memory_total_bytes": int(props.total_memory),
                            "compute_capability": f"{props.major}.{props.minor}",
                            "uuid": str(uuid) if uuid is not None else "",
                        }
                    )
        except Exception as exc:  # noqa: BLE001
            info["cuda_error"] = f"{type(exc).__name__}: {exc}"
    mps = getattr(torch.backends, "mps", None)
    info["mps_available"] = bool(mps is not None and mps.is_available())
    return info, torch


def _nvml(nvml: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Driver and GPUs as NVML sees them (every GPU, whatever CUDA_VISIBLE_DEVICES says)."""
    module, reason = import_nvml(nvml)
    if module is None:
        return {"status": f"{NO_GPU}: {reason}", "driver_version": None, "driver_cuda": None}, []
    try:
        module.nvmlInit()
    except Exception as exc:  # noqa: BLE001
        return {"status": f"{NO_GPU}: {init_failure_reason(module, exc)}", "driver_version": None, "driver_cuda": None}, []
    driver: dict[str, Any] = {"status": "ok", "driver_version": None, "driver_cuda": None}
    gpus: list[dict[str, Any]] = []
    try:
        driver["driver_version"] = _call_text(module, "nvmlSystemGetDriverVersion")
        cuda = _call(module, "nvmlSystemGetCudaDriverVersion")
        driver["driver_cuda"] = cuda_version_text(cuda) if isinstance(cuda, int) else None
        count = _call(module, "nvmlDeviceGetCount") or 0
        for index in range(int(count)):
            gpu: dict[str, Any] = {"index": index, "name": f"GPU {index}", "error": ""}
            try:
                handle = module.nvmlDeviceGetHandleByIndex(index)
            except Exception as exc:  # noqa: BLE001
                gpu["error"] = f"NVML cannot open it: {exc}"
                gpus.append(gpu)
                continue
            gpu["name"] = _call_text(module, "nvmlDeviceGetName", handle) or gpu["name"]
            gpu["uuid"] = _call_text(module, "nvmlDeviceGetUUID", handle) or ""
            memory = _call(module, "nvmlDeviceGetMemoryInfo", handle)
            gpu["memory_total_bytes"] = int(memory.total) if memory is not None else None
            capability = _call(module, "nvmlDeviceGetCudaComputeCapability", handle)
            gpu["compute_capability"] = f"{capability[0]}.{capability[1]}" if capability else None
            gpus.append(gpu)
        if not gpus:
            driver["status"] = f"{NO_GPU}: the NVIDIA driver reports no GPU"
    finally:
        try:
            module.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return driver, gpus


def _call(module: Any, name: str, *args: Any) -> Any:
    try:
        return getattr(module, name)(*args)
    except Exception:  # noqa: BLE001 - every NVML field is optional
        return None


def _call_text(module: Any, name: str, *args: Any) -> str | None:
    value = _call(module, name, *args)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return None if value is None else str(value)


def _bare_uuid(uuid: str | None) -> str:
    uuid = (uuid or "").strip().lower()
    return uuid.split("-", 1)[1] if uuid.startswith(("gpu-", "mig-")) else uuid


def _gpus(nvml_gpus: list[dict[str, Any]], torch_info: dict[str, Any], warnings: list[str]) -> list[dict[str, Any]]:
    torch_devices = list(torch_info.get("cuda_devices", []))
    by_uuid = {_bare_uuid(d["uuid"]): d for d in torch_devices if d.get("uuid")}
    if not nvml_gpus:  # NVML missing but torch sees GPUs (unusual): report torch's view
        nvml_gpus = [
            {"index": i, "name": d["name"], "uuid": d["uuid"], "memory_total_bytes": d["memory_total_bytes"],
             "compute_capability": d["compute_capability"], "error": ""}
            for i, d in enumerate(torch_devices)
        ]  # fmt: skip
    if len(nvml_gpus) == 1 and len(torch_devices) == 1 and not by_uuid:
        by_uuid = {_bare_uuid(nvml_gpus[0].get("uuid")): torch_devices[0]}
    arch_list = torch_info.get("arch_list") or []
    result = []
    for gpu in nvml_gpus:
        entry = dict(gpu)
        label = f"GPU {gpu['index']} ({gpu['name']})"
        device = by_uuid.get(_bare_uuid(gpu.get("uuid")))
        entry["torch_device"] = device["device"] if device else None
        capability = _major_minor(gpu.get("compute_capability"))
        if capability is None:
            entry.update(torch_kernels=None, kernels_note="compute capability unknown", bf16=None, bf16_reason="compute capability unknown")
        else:
            entry["torch_kernels"], entry["kernels_note"] = kernel_support(capability, arch_list)
            entry["bf16"], entry["bf16_reason"] = bf16_support(capability)
            if torch_info.get("cuda") and not entry["torch_kernels"]:
                warnings.append(f"{label}: {entry['kernels_note']}")
        entry["usable"] = bool(device) and bool(entry["torch_kernels"])
        if gpu.get("error"):
            warnings.append(f"{label}: {gpu['error']}")
        result.append(entry)
    return result


def _plugins(problems: list[str], warnings: list[str]) -> dict[str, Any]:
    try:
        found = registry()
    except Exception as exc:  # noqa: BLE001
        problems.append(f"plugin discovery failed: {type(exc).__name__}: {exc}")
        return {"plugins": [], "tasks": []}
    plugins = []
    for record in found.plugins:
        plugins.append(
            {
                "name": record.name,
                "version": record.version,
                "distribution": record.distribution,
                "builtin": record.builtin,
                "status": record.status,
                "message": record.message,
                "tasks": list(record.tasks),
                "warnings": list(record.warnings),
            }
        )
        if record.status in NOT_LOADED:
            warnings.append(f"plugin {record.name!r} {record.status}: {record.message}")
        for text in record.warnings:
            warnings.append(f"plugin {record.name!r}: {text}")
    tasks = sorted(found.tasks)
    if not tasks:
        problems.append("no task is available: every plugin failed, is blocked or is missing (see `trainlab plugins`)")
    return {"plugins": plugins, "tasks": tasks}


def _cache_dir(env: str, *default: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ[env]).expanduser() if os.environ.get(env) else Path(base, *default)


def _offline(warnings: list[str]) -> dict[str, Any]:
    expected = dict(trainlab._OFFLINE_ENV)
    env = {key: os.environ.get(key) for key in expected}
    wrong = [key for key, value in expected.items() if env[key] != value]
    if wrong:
        warnings.append("offline settings overridden: " + ", ".join(f"{k}={env[k]!r}" for k in wrong))
    if os.environ.get("HF_HUB_CACHE"):
        hf_cache = Path(os.environ["HF_HUB_CACHE"]).expanduser()
    else:
        hf_cache = _cache_dir("HF_HOME", "huggingface") / "hub"
    torch_hub = _cache_dir("TORCH_HOME", "torch") / "hub" / "checkpoints"
    return {
        "offline": not wrong,
        "env": env,
        "model_store": str(paths.model_store_dir()),
        "hf_cache": str(hf_cache),
        "hf_cache_exists": hf_cache.is_dir(),
        "torch_hub_checkpoints": str(torch_hub),
        "torch_hub_checkpoints_exists": torch_hub.is_dir(),
    }


def _writable(path: Path) -> tuple[bool, str]:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".doctor-", delete=True) as handle:
            handle.write(b"ok")
            handle.flush()
    except OSError as exc:
        return False, f"{type(exc).__name__}: {exc.strerror or exc}"
    return True, ""


def _folders(problems: list[str], warnings: list[str]) -> dict[str, Any]:
    import psutil

    folders = {}
    # data and runs are needed to train; logs and config only degrade.
    for name, path, needed in (
        ("data", paths.data_dir(), True),
        ("runs", paths.runs_dir(), True),
        ("logs", paths.log_dir(), False),
        ("config", paths.config_dir(), False),
    ):
        ok, error = _writable(path)
        free = None
        if ok:
            try:
                free = int(psutil.disk_usage(str(path)).free)
            except OSError:
                pass
        folders[name] = {"path": str(path), "writable": ok, "error": error, "free_bytes": free}
        if not ok:
            (problems if needed else warnings).append(f"the {name} folder {path} is not writable ({error})")
        elif free is not None and free < LOW_DISK_BYTES:
            warnings.append(f"the {name} folder {path} has only {free / GiB:.1f} GiB free")
    return folders


# -- the report --------------------------------------------------------------------------------


def collect(*, nvml: Any = None) -> dict[str, Any]:
    """Everything ``trainlab doctor`` reports; ``nvml`` replaces the pynvml module."""
    problems: list[str] = []
    warnings: list[str] = []
    torch_info, _ = _torch(problems, warnings)
    nvml_info, nvml_gpus = _nvml(nvml)
    ok, message = driver_check(nvml_info["driver_version"], nvml_info["driver_cuda"], torch_info.get("cuda"))
    driver = {**nvml_info, "new_enough": ok if nvml_gpus else None, "message": message if nvml_gpus else nvml_info["status"]}
    gpus = _gpus(nvml_gpus, torch_info, warnings)
    if nvml_gpus:
        if torch_info.get("version") and torch_info.get("cuda") is None:
            warnings.append("the NVIDIA GPUs cannot be used: this torch build has no CUDA support (install a CUDA build of torch)")
        elif ok is False:
            warnings.append(f"NVIDIA driver too old: {message}")
        elif torch_info.get("version") and not torch_info.get("cuda_available"):
            detail = torch_info.get("cuda_error") or "torch.cuda.is_available() is False"
            hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
            if hidden is not None:
                detail += f"; CUDA_VISIBLE_DEVICES={hidden!r}"
            warnings.append(f"NVML sees {len(nvml_gpus)} GPU(s) but torch cannot use them ({detail})")
    devices = []
    if torch_info.get("cpu_ok"):
        devices.append("cpu")
        devices.extend(d["device"] for d in torch_info.get("cuda_devices", []))
        if torch_info.get("mps_available"):
            devices.append("mps")
    if devices == ["cpu"] and torch_info.get("cpu_ok"):
        warnings.append("no usable GPU: training runs on the CPU, which is much slower")
    plugins = _plugins(problems, warnings)
    report = {
        "trainlab": trainlab.__version__,
        "python": _python(),
        "cpu": _cpu(),
        "torch": torch_info,
        "driver": driver,
        "gpus": gpus,
        "devices": devices,
        "plugins": plugins["plugins"],
        "tasks": plugins["tasks"],
        "offline": _offline(warnings),
        "folders": _folders(problems, warnings),
    }
    report["can_train"] = not problems and bool(devices)
    report["problems"] = problems
    report["warnings"] = warnings
    return report


def exit_code(report: dict[str, Any]) -> int:
    return 0 if report.get("can_train") else 1


def _size(value: int | None) -> str:
    return "?" if value is None else f"{value / GiB:.1f} GiB"


def format_text(report: dict[str, Any]) -> str:
    """The report for people: one line per fact, warnings and the verdict last."""
    lines = [f"TrainLab {report['trainlab']}"]
    python = report["python"]
    lines.append(f"  Python   {python['version']} ({python['executable']})")
    cpu = report["cpu"]
    torch_info = report["torch"]
    bf16 = ""
    if torch_info.get("cpu_bf16") is not None:
        bf16 = ", native bf16 (CPU runs train in bf16 by default)" if torch_info["cpu_bf16"] else ", no native bf16 (CPU runs train in fp32)"
    lines.append(f"  CPU      {cpu['logical_cores']} logical cores, {_size(cpu['ram_total_bytes'])} RAM{bf16}")
    if torch_info.get("version"):
        cuda = f"CUDA {torch_info['cuda']}" if torch_info.get("cuda") else "no CUDA (CPU-only build)"
        cudnn = f", cuDNN {torch_info['cudnn']}" if torch_info.get("cudnn") else ""
        lines.append(f"  torch    {torch_info['version']}, built for {cuda}{cudnn}")
        if torch_info.get("arch_list"):
            lines.append(f"           kernels for {' '.join(torch_info['arch_list'])}")
    else:
        lines.append(f"  torch    not usable: {torch_info.get('error')}")
    driver = report["driver"]
    if driver.get("driver_version"):
        verdict = {True: "ok", False: "TOO OLD", None: "?"}[driver.get("new_enough")]
        lines.append(f"  Driver   {driver['driver_version']} (CUDA {driver.get('driver_cuda') or '?'}): {verdict}: {driver['message']}")
    else:
        lines.append(f"  Driver   {driver['status']}")
    for gpu in report["gpus"]:
        capability = gpu.get("compute_capability") or "?"
        device = gpu.get("torch_device") or "not visible to torch"
        lines.append(f"  GPU {gpu['index']}    {gpu['name']}, {_size(gpu.get('memory_total_bytes'))}, compute {capability}, {device}")
        kernels = "yes" if gpu.get("torch_kernels") else "NO"
        lines.append(f"           torch kernels: {kernels} ({gpu.get('kernels_note')})")
        bf16 = "yes" if gpu.get("bf16") else f"no: {gpu.get('bf16_reason')}"
        lines.append(f"           bf16: {bf16}")
    lines.append(f"  Devices  {', '.join(report['devices']) or 'none'}")
    for plugin in report["plugins"]:
        tasks = ", ".join(plugin["tasks"]) or "no tasks"
        message = f": {plugin['message']}" if plugin["message"] else ""
        lines.append(f"  Plugin   {plugin['name']} {plugin['version']}: {plugin['status']} ({tasks}){message}")
    offline = report["offline"]
    lines.append(f"  Offline  {'yes' if offline['offline'] else 'NO'}: " + ", ".join(f"{k}={v}" for k, v in offline["env"].items()))
    lines.append(f"           model store {offline['model_store']}")
    lines.append(f"           Hugging Face cache {offline['hf_cache']}{'' if offline['hf_cache_exists'] else ' (absent)'}")
    lines.append(
        f"           torch hub checkpoints {offline['torch_hub_checkpoints']}"
        f"{'' if offline['torch_hub_checkpoints_exists'] else ' (absent)'}"
    )
    for name, folder in report["folders"].items():
        state = "writable" if folder["writable"] else f"NOT WRITABLE ({folder['error']})"
        free = f", {_size(folder['free_bytes'])} free" if folder.get("free_bytes") is not None else ""
        lines.append(f"  Folder   {name}: {folder['path']} ({state}{free})")
    for problem in report["problems"]:
        lines.append(f"PROBLEM: {problem}")
    for warning in report["warnings"]:
        lines.append(f"warning: {warning}")
    if report["can_train"]:
        lines.append(f"Ready to train on: {', '.join(report['devices'])}")
    else:
        lines.append("This machine cannot train (see the problems above).")
    return "\n".join(lines)
