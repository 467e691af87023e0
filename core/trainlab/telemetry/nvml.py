"""NVML at the import boundary: the module, its return codes, its strings.

The sampler talks to NVML only through a module object: ``pynvml`` (from
nvidia-ml-py) or anything that quacks like it (tests pass a fake one).  What
the codes and failures mean is decided here, in one place.
"""

from __future__ import annotations

from typing import Any

# NVML return codes (nvml.h), for modules that do not define them.
ERROR_CODES = {
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
}


def return_code(nvml: Any, name: str) -> int:
    """The NVML return code called ``name``: the module's own, else nvml.h's."""
    return int(getattr(nvml, name, ERROR_CODES[name]))


def error_code(nvml: Any, exc: BaseException) -> int | None:
    """The return code an NVML error carries; None for any other exception."""
    error_type = getattr(nvml, "NVMLError", None)
    if isinstance(error_type, type) and isinstance(exc, error_type):
        return getattr(exc, "value", None)
    return None


def import_nvml(nvml: Any = None) -> tuple[Any, str]:
    """The NVML module (``nvml`` if given, else ``pynvml``) and "" or why not."""
    if nvml is not None:
        return nvml, ""
    try:
        import pynvml
    except ImportError as exc:
        return None, f"nvidia-ml-py is not installed ({exc})"
    return pynvml, ""


def init_failure_reason(nvml: Any, exc: BaseException) -> str:
    """Why ``nvmlInit`` failed, in a user's words."""
    code = error_code(nvml, exc)
    if code == return_code(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND"):
        return "the NVIDIA driver is not installed (NVML library not found)"
    if code == return_code(nvml, "NVML_ERROR_DRIVER_NOT_LOADED"):
        return "the NVIDIA driver is not loaded"
    if code == return_code(nvml, "NVML_ERROR_NO_PERMISSION"):
        return "no permission to query the NVIDIA driver"
    if code == return_code(nvml, "NVML_ERROR_LIB_RM_VERSION_MISMATCH"):
        return "the NVIDIA driver library and kernel module differ in version (reboot after the driver update)"
    return f"NVML could not start ({type(exc).__name__}: {exc})"


def decode(value: Any) -> str:
    """NVML strings: bytes in older bindings, str in newer ones."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def constant(nvml: Any, name: str, default: int) -> int:
    """An NVML enum value (NVML_CLOCK_SM, ...), with nvml.h's as the default."""
    return int(getattr(nvml, name, default))


def bare_uuid(uuid: str) -> str:
    """A GPU UUID without NVML's GPU-/MIG- prefix, lower-case: torch gives it bare."""
    uuid = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        if uuid.startswith(prefix):
            return uuid[len(prefix) :]
    return uuid
