"""Before a run over several GPUs trains: peer-to-peer on consumer cards, and an all_reduce that adds up.

GeForce cards (the RTX 4090 among them) have no peer-to-peer over PCIe, yet
NCCL may try it, and all_reduce then hangs or returns wrong data
(NVIDIA/nccl-tests#117, #287).  ``p2p_advice`` reads the topology through
NVML: when two of the run's GPUs on this machine cannot reach each other
peer-to-peer and one of them is a GeForce or TITAN card, NCCL is told
``NCCL_P2P_DISABLE=1`` (through shared memory instead, a little slower),
unless the user set that variable either way.  ``check_all_reduce`` then
sums a known tensor across the group and stops the run with advice when the
sum is wrong or does not arrive in time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, MutableMapping, Sequence

from trainlab.api.errors import RunFailed

CONSUMER_MARKERS = ("GeForce", "TITAN")
ADVICE = (
    "set NCCL_P2P_DISABLE=1 (consumer cards without peer-to-peer), update the NVIDIA driver, "
    "or turn off IOMMU / PCIe ACS in the BIOS; docs/distributed.md, 'Consumer cards'"
)


@dataclass(frozen=True)
class P2PAdvice:
    disable: bool  # whether to set NCCL_P2P_DISABLE=1
    reason: str
    cards: tuple[str, ...] = ()
    pairs_without_p2p: tuple[tuple[int, int], ...] = field(default=())


def p2p_advice(nvml: Any, indices: Sequence[int] | None = None, env: MutableMapping[str, str] | None = None) -> P2PAdvice:
    """What to tell NCCL about the GPUs ``indices`` (NVML numbers; None: all); never raises."""
    env = os.environ if env is None else env
    if "NCCL_P2P_DISABLE" in env:
        return P2PAdvice(False, f"NCCL_P2P_DISABLE={env['NCCL_P2P_DISABLE']} set by the user; left as it is")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no NVML: nothing to read, NCCL decides alone
        return P2PAdvice(False, f"NVML unavailable ({exc}); peer-to-peer left to NCCL")
    try:
        chosen = list(indices) if indices is not None else list(range(nvml.nvmlDeviceGetCount()))
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in chosen]
        names = tuple(_text(nvml.nvmlDeviceGetName(h)) for h in handles)
        if len(handles) < 2:
            return P2PAdvice(False, "one GPU on this machine: no peer-to-peer traffic", names)
        read = getattr(nvml, "NVML_P2P_CAPS_INDEX_READ", 0)
        ok = getattr(nvml, "NVML_P2P_STATUS_OK", 0)
        missing = []
        for a in range(len(handles)):
            for b in range(a + 1, len(handles)):
                try:
                    status = nvml.nvmlDeviceGetP2PStatus(handles[a], handles[b], read)
                except Exception:  # noqa: BLE001 - an old driver without the query: treat as no P2P
                    status = None
                if status != ok:
                    missing.append((chosen[a], chosen[b]))
        consumer = [n for n in names if any(marker in n for marker in CONSUMER_MARKERS)]
        if missing and consumer:
            return P2PAdvice(True, f"{consumer[0]}: no peer-to-peer between GPUs {missing[0][0]} and {missing[0][1]}; NCCL_P2P_DISABLE=1 set",
                             names, tuple(missing))  # fmt: skip
        if missing:
            return P2PAdvice(False, f"no peer-to-peer between GPUs {missing[0][0]} and {missing[0][1]}; NCCL routes around it", names, tuple(missing))
        return P2PAdvice(False, "peer-to-peer between every pair of GPUs", names)
    except Exception as exc:  # noqa: BLE001 - a preflight that fails must not stop a run NCCL could run
        return P2PAdvice(False, f"could not read the GPU topology ({type(exc).__name__}: {exc})")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def apply_p2p_preflight(env: MutableMapping[str, str] | None = None, nvml: Any = None) -> P2PAdvice:
    """Read this machine's run GPUs (``CUDA_VISIBLE_DEVICES``) and set NCCL_P2P_DISABLE if they need it."""
    env = os.environ if env is None else env
    if nvml is None:
        try:
            import pynvml as nvml  # type: ignore[no-redef]
        except ImportError:
            return P2PAdvice(False, "pynvml not installed; peer-to-peer left to NCCL")
    visible = env.get("CUDA_VISIBLE_DEVICES", "")
    indices = [int(v) for v in visible.split(",")] if visible and all(v.strip().isdigit() for v in visible.split(",")) else None
    advice = p2p_advice(nvml, indices, env)
    if advice.disable:
        env["NCCL_P2P_DISABLE"] = "1"
    return advice


def check_all_reduce(device: str, world_size: int, rank: int, elements: int = 1 << 20) -> None:
    """Sum ``rank + 1`` over the group; RunFailed with advice when the sum is wrong or never comes."""
    import torch
    import torch.distributed as dist

    tensor = torch.full((elements,), float(rank + 1), dtype=torch.float32, device=device)
    try:
        dist.all_reduce(tensor)
        expected = world_size * (world_size + 1) / 2
        wrong = int((tensor != expected).sum().item())
    except Exception as exc:  # noqa: BLE001 - a hang ends in the collective timeout
        raise RunFailed(f"the pre-training all_reduce across {world_size} rank(s) failed ({type(exc).__name__}: {exc}); {ADVICE}") from None
    if wrong:
        raise RunFailed(f"the pre-training all_reduce across {world_size} rank(s) returned wrong data in {wrong} of {elements} values; {ADVICE}")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
