"""Built-in plugin: image tasks: classification, regression and multi-label.

This module is imported at plugin discovery, so it only builds the tasks'
descriptors: no torch, torchvision or PIL here.  The runtime side lives in
``trainlab_plugins.image.task`` (classification), ``.regression`` and
``.multilabel``, on what they share in ``.base``, and is imported when a run
starts.
"""

from __future__ import annotations

import dataclasses

from trainlab import FINETUNE_PARAM, InputSpec, Param, Preset, TaskSpec, hookimpl
from trainlab_plugins.image.folder import IMAGE_EXTENSIONS  # standard library only: cheap at discovery

TASK_ID = "image-classification"
REGRESSION_TASK_ID = "image-regression"
MULTILABEL_TASK_ID = "image-multilabel"
SAMPLE_DATA = "samples/images/shapes"
REGRESSION_SAMPLE_DATA = "samples/images/cells/cells.csv"
MULTILABEL_SAMPLE_DATA = "samples/images/scenes/scenes.csv"
IMAGE_INPUT = InputSpec(kind="image", suffixes=tuple(sorted(IMAGE_EXTENSIONS)), title="an image")
# Model folders an image task starts from (trainlab.models.catalog's names):
# TrainLab image model folders of any image task, and torchvision checkpoints.
MODEL_FORMATS = ("trainlab-image", "torchvision-checkpoint")

# Architecture names as torchvision spells them; "small-cnn" is TrainLab's own,
# "auto" TrainLab's small CNN sized to the data (image-classification offers it).
TORCHVISION_MODELS = (
    "resnet18",
    "resnet34",
    "resnet50",
    "mobilenet_v3_small",
    "mobilenet_v3_large",
    "efficientnet_b0",
    "convnext_tiny",
)
# Pretrained architectures torchvision lacks, built by TrainLab in the layout of
# their published weights (trainlab_plugins.image.efficientnet_lite).
OWN_PRETRAINED_MODELS = ("efficientnet_lite0",)
PRETRAINED_MODELS = (*TORCHVISION_MODELS, *OWN_PRETRAINED_MODELS)
MODELS = ("auto", "small-cnn", *PRETRAINED_MODELS)
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
    # finetune=head is freeze_backbone under the engine-wide name (docs/finetuning.md)
    dataclasses.replace(FINETUNE_PARAM, choices=("full", "head")),
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
        "memory_cache",
        "str",
        "auto",
        "Keep each image decoded in memory after its first use, so later epochs skip decoding: auto (when the data "
        "fits in a quarter of the free RAM and loading runs in the training process), off, or a budget in MB.",
        title="Decoded images in memory",
        group="hardware",
        advanced=True,
    ),
    Param(
        "channels_last",
        "choice",
        "auto",
        "Channels-last memory format for the model and batches: auto (on CUDA; on the CPU it is faster but a resumed run is not bit-exact), true, false.",
        choices=("auto", "true", "false"),
        title="Channels last",
        group="hardware",
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

# Images listed in a table (CONTRACT.md "Data formats").
TABLE_PARAMS = (
    Param(
        "image_column",
        "str",
        "image",
        "Tables: the column with each image's path, relative to the table's folder or absolute.",
        title="Image column",
        group="data",
        advanced=True,
    ),
    Param(
        "label_column",
        "str",
        "label",
        "Tables: the column with each image's label.",
        title="Label column",
        group="data",
        advanced=True,
    ),
)


def _with(params: tuple[Param, ...], **changes: dict) -> tuple[Param, ...]:
    """``params`` with some fields of the named ones changed (one schema, a task's own wording)."""
    return tuple(dataclasses.replace(p, **changes[p.name]) if p.name in changes else p for p in params)


_TORCHVISION_TITLES = {
    "resnet18": "ResNet-18",
    "resnet34": "ResNet-34",
    "resnet50": "ResNet-50",
    "mobilenet_v3_small": "MobileNetV3 small",
    "mobilenet_v3_large": "MobileNetV3 large",
    "efficientnet_b0": "EfficientNet-B0",
    "convnext_tiny": "ConvNeXt tiny",
}

# model=auto: the batches of 32 at lr 0.002 reached the plain script's accuracy an
# epoch earlier than batches of 64 at 0.003 or of 128 at 0.006 with a one-cycle
# schedule (bench/image_time_to_accuracy.py --levers, docs/tasks/image-classification.md).
AUTO_PRESET = {"image_size": 64, "lr": 0.002, "batch_size": 32, "pretrained": False}

PRESETS = (
    Preset(
        "auto",
        "Small CNN sized to the data",
        "TrainLab's small CNN with its depth chosen from the image size and its width from the number of "
        "training images (the run's log and run.json say which); trained from scratch, fast on a CPU.",
        AUTO_PRESET,
    ),
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
    Preset(
        "efficientnet_lite0",
        "EfficientNet-Lite0",
        "EfficientNet-Lite0 (EfficientNet-B0 for mobile chips: ReLU6, no squeeze-excitation; 4.7 M weights), "
        "fine-tuned from its ImageNet weights: efficientnet-lite0-57934424.pth staged in $TORCH_HOME/hub/checkpoints, "
        "or any file of that layout named with weights=PATH; set pretrained=false to train from scratch.",
        # lr as the MobileNets': a depthwise network of batch-norm and ReLU6 like them
        {"image_size": 224, "lr": 0.0003, "pretrained": True},
    ),
)
# Telling which of a few objects an image shows is learnt in more, smaller
# steps than one class per image: on the multi-label sample (400 images),
# small-cnn in batches of 32 reached micro-F1 0.98 in 15 epochs, in batches
# of 64 0.86 (docs/tasks/image-multilabel.md).
MULTILABEL_PRESETS = tuple(
    dataclasses.replace(p, overrides={**p.overrides, "batch_size": 32}) if p.name == "small-cnn" else p for p in PRESETS
)

# Image classification's default: auto, given 20 epochs.  With the generic 10
# it ended the bundled sample clearly below small-cnn; with 20 it reaches
# small-cnn's accuracy in less time (bench/image_sample_accuracy.py and
# bench/image_time_to_accuracy.py measure both).
CLASSIFICATION_AUTO_EPOCHS = 20
CLASSIFICATION_PRESETS = tuple(
    dataclasses.replace(p, overrides={**p.overrides, "epochs": CLASSIFICATION_AUTO_EPOCHS}) if p.name == "auto" else p
    for p in PRESETS
)

SPEC = TaskSpec(
    id=TASK_ID,
    title="Image classification",
    factory="trainlab_plugins.image.task:ImageClassificationTask",
    description=(
        "Train a CNN on a folder of labelled images (one sub-folder per class) and report its accuracy. "
        "The bundled shapes sample needs the default model's 20 epochs (94-99 % accuracy, depending on the seed); a few epochs stay far below it."
    ),
    params=_with(
        PARAMS + TABLE_PARAMS,
        model={"default": "auto",
               "help": "auto (a small CNN sized to the images and their number, trained for 20 epochs), small-cnn "
               "(a fixed, larger small CNN, 10 epochs), an architecture preset, or the folder of a "
               "trained TrainLab image model to fine-tune."},
    ),
    defaults={"epochs": 10},
    presets=CLASSIFICATION_PRESETS,
    data_kind="either",
    data_help=(
        "A folder with one sub-folder per class (root/<label>/<image>); with train/ and val/ (and test/) "
        "sub-folders those splits are used, otherwise val_fraction of each class is held out. "
        "Or a table (.csv, .tsv, .jsonl, or a folder with train.* and val.*) with image and label columns."
    ),
    sample_data=SAMPLE_DATA,
    input=IMAGE_INPUT,
    model_formats=MODEL_FORMATS,
)

_TABLE_HELP = " (paths relative to the table's folder, or absolute), or a folder with train.* and val.* (optionally test.*) tables."

REGRESSION_SPEC = TaskSpec(
    id=REGRESSION_TASK_ID,
    title="Image regression",
    factory="trainlab_plugins.image.regression:ImageRegressionTask",
    description="Train a CNN to predict a number for each image (a count, a size, a concentration) and report MAE, RMSE and R\u00b2.",
    params=_with(
        PARAMS + TABLE_PARAMS,
        val_fraction={"help": "Share of the rows held out for validation, spread over the range of the label, when the data has no val table."},
        label_column={"help": "Tables: the column with each image's number."},
    ),
    defaults={"epochs": 15},
    presets=PRESETS,
    data_kind="either",
    data_help="A .csv, .tsv or .jsonl table with an image column and a numeric label column" + _TABLE_HELP,
    sample_data=REGRESSION_SAMPLE_DATA,
    family="regression",
    input=IMAGE_INPUT,
    model_formats=MODEL_FORMATS,
)

MULTILABEL_SPEC = TaskSpec(
    id=MULTILABEL_TASK_ID,
    title="Image multi-label classification",
    factory="trainlab_plugins.image.multilabel:ImageMultiLabelTask",
    description="Train a CNN to tell which of several labels apply to each image (any number, or none) and report micro and macro F1.",
    params=_with(
        PARAMS + TABLE_PARAMS,
        val_fraction={"help": "Share of the rows held out for validation when the data has no val table; every label stays in training where possible."},
        label_column={"default": "labels", "help": "Tables: the column with each image's labels (joined by label_separator in CSV/TSV, a list in JSONL)."},
    )
    + (
        Param(
            "label_separator",
            "str",
            ";",
            "CSV/TSV: what joins the labels of one image in the label column.",
            title="Label separator",
            group="data",
            advanced=True,
        ),
        Param(
            "threshold",
            "str",
            "0.5",
            "Probability from which a label is predicted: a number between 0 and 1, or auto "
            "(chosen per label on the validation split to maximise its F1, and recorded with the model).",
            title="Decision threshold",
            group="task",
        ),
    ),
    # threshold=auto: each label's threshold chosen on the validation split for
    # its F1 (recorded with the model); a fixed 0.5 suits no rare label
    defaults={"epochs": 15, "threshold": "auto"},
    presets=MULTILABEL_PRESETS,
    data_kind="either",
    data_help="A .csv, .tsv or .jsonl table with an image column and a labels column" + _TABLE_HELP,
    sample_data=MULTILABEL_SAMPLE_DATA,
    family="multilabel",
    input=IMAGE_INPUT,
    model_formats=MODEL_FORMATS,
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.0"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [SPEC, REGRESSION_SPEC, MULTILABEL_SPEC]
