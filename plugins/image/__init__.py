"""Built-in plugin: image classification from a folder of class folders.

This module is imported at plugin discovery, so it only builds the task's
descriptor: no torch, torchvision or PIL here.  The runtime side lives in
``trainlab.plugins.image.task`` and is imported when a run starts.
"""

from __future__ import annotations

from trainlab import InputSpec, Param, Preset, TaskSpec, hookimpl
from trainlab.plugins.image.folder import IMAGE_EXTENSIONS  # standard library only: cheap at discovery

TASK_ID = "image-classification"
SAMPLE_DATA = "samples/images/shapes"

# Architecture names as torchvision spells them; "small-cnn" is TrainLab's own.
TORCHVISION_MODELS = (
    "resnet18",
    "resnet34",
    "resnet50",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "efficientnet_b0",
    "convnext_tiny",
)
MODELS = ("small-cnn", *TORCHVISION_MODELS)
AUGMENTATIONS = ("auto", "none", "light", "standard")

PARAMS = (
    Param(
        "model",
        "choice",
        "small-cnn",
        "Architecture preset, or the folder of a trained TrainLab image model to fine-tune.",
        choices=MODELS,
        open_choices=True,
        title="Model",
        group="model",
    ),
    Param(
        "pretrained",
        "bool",
        False,
        "Start from ImageNet weights found on this machine ($TORCH_HOME/hub/checkpoints); never downloads.",
        title="Pretrained weights",
        group="model",
    ),
    Param(
        "weights",
        "path",
        "",
        "A weights file to start from (.safetensors, or .pth/.pt loaded with weights_only=True).",
        title="Weights file",
        group="model",
        advanced=True,
    ),
    Param(
        "freeze_backbone",
        "bool",
        False,
        "Train only the classifier head (linear probe); the backbone and its batch-norm statistics stay fixed.",
        title="Freeze backbone",
        group="model",
    ),
    Param(
        "image_size",
        "int",
        224,
        "Side of the square the images are resized and cropped to.",
        minimum=16,
        maximum=1024,
        title="Image size",
        group="data",
    ),
    Param(
        "augmentation",
        "choice",
        "auto",
        "Training augmentation: none; light (random crop of 80-100% of the image); standard "
        "(ImageNet-style random-resized crop, 8-100%); auto (light for runs of 10+ epochs on images of 128+ px, otherwise none).",
        choices=AUGMENTATIONS,
        title="Augmentation",
        group="data",
    ),
    Param(
        "hflip",
        "choice",
        "auto",
        "Random horizontal flips in training: true, false, or auto (only with augmentation=standard). "
        "Wrong for digits, text and images whose left and right differ.",
        choices=("auto", "true", "false"),
        title="Horizontal flip",
        group="data",
    ),
    Param(
        "val_fraction",
        "float",
        0.2,
        "Share of each class held out for validation when the data has no val/ folder.",
        minimum=0.01,
        maximum=0.9,
        title="Validation fraction",
        group="data",
    ),
    Param(
        "crop_fraction",
        "float",
        1.0,
        "Evaluation: resize the shorter side to image_size / crop_fraction, then take the centre square.",
        minimum=0.5,
        maximum=1.0,
        title="Evaluation crop fraction",
        group="data",
        advanced=True,
    ),
    Param(
        "num_workers",
        "choice",
        "auto",
        "Data-loading processes; auto picks from the CPU cores and the measured decoding cost (0: in the training thread).",
        choices=("auto", "0", "1", "2", "4", "8"),
        open_choices=True,
        title="Loader workers",
        group="hardware",
        advanced=True,
    ),
)

_TORCHVISION_TITLES = {
    "resnet18": "ResNet-18",
    "resnet34": "ResNet-34",
    "resnet50": "ResNet-50",
    "mobilenet_v3_small": "MobileNetV3 small",
    "mobilenet_v3_large": "MobileNetV3 large",
    "efficientnet_b0": "EfficientNet-B0",
    "convnext_tiny": "ConvNeXt tiny",
}

PRESETS = (
    Preset(
        "small-cnn",
        "Small CNN",
        "Four conv/batch-norm/pool stages and global pooling, trained from scratch; fast on a CPU, "
        "good for small images and quick experiments.",
        {"image_size": 64, "lr": 0.003, "batch_size": 64, "pretrained": False},
    ),
    *(
        Preset(
            name,
            _TORCHVISION_TITLES[name],
            f"torchvision {name}, fine-tuned from its ImageNet weights (staged in $TORCH_HOME/hub/checkpoints); "
            "set pretrained=false to train from scratch.",
            {"image_size": 224, "lr": 0.0003 if name.startswith("mobilenet") else 0.0001, "pretrained": True},
        )
        for name in TORCHVISION_MODELS
    ),
)

SPEC = TaskSpec(
    id=TASK_ID,
    title="Image classification",
    factory="trainlab.plugins.image.task:ImageClassificationTask",
    description=(
        "Train a CNN on a folder of labelled images (one sub-folder per class) and report its accuracy. "
        "The bundled shapes sample needs the default 10 epochs (about 99 % accuracy); 3 stay near chance."
    ),
    params=PARAMS,
    defaults={"epochs": 10},
    presets=PRESETS,
    data_kind="folder",
    data_help=(
        "A folder with one sub-folder per class (root/<label>/<image>); with train/ and val/ (and test/) "
        "sub-folders those splits are used, otherwise val_fraction of each class is held out."
    ),
    sample_data=SAMPLE_DATA,
    input=InputSpec(kind="image", suffixes=tuple(sorted(IMAGE_EXTENSIONS)), title="an image"),
    # a TrainLab image model folder (a run's model/) to fine-tune; ImageNet weights from the torch hub cache
    model_formats=("trainlab-image", "torchvision-checkpoint"),
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.0"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [SPEC]
