"""Built-in plugin: object detection (find and box things in images).

Imported at plugin discovery, so it only builds the task's descriptor: no
torch, torchvision or PIL here.  The data readers are in ``.formats``, the
runtime side in ``.task``.
"""

from __future__ import annotations

from trainlab import (
    Column,
    ExampleRows,
    InputSpec,
    Metric,
    Param,
    Preset,
    Series,
    Table,
    TaskSpec,
    hookimpl,
)

TASK_ID = "object-detection"
SAMPLE_DATA = "samples/detection/shapes"
FAMILY = "object-detection"
IMAGE_INPUT = InputSpec(kind="image", suffixes=(".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp"), title="an image")
# The detector names as torchvision spells its builders; small-fcos is TrainLab's own.
MODELS = (
    "auto",
    "small-fcos",
    "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
    "fasterrcnn_resnet50_fpn_v2",
    "retinanet_resnet50_fpn_v2",
    "fcos_resnet50_fpn",
    "ssdlite320_mobilenet_v3_large",
)

# What trainlab.DetectionMetrics computes (COCO's figures through torchmetrics).
METRICS = (
    Metric("map", "mAP@0.5:0.95", True, "score", "COCO mean average precision, over IoU thresholds 0.5 to 0.95 and the classes."),
    Metric("map50", "mAP@0.5", True, "score", "Mean average precision at IoU 0.5 (PASCAL VOC's measure)."),
    Metric("map75", "mAP@0.75", True, "score", "Mean average precision at IoU 0.75: boxes that fit tightly."),
    Metric("mar_100", "Recall@100", True, "score",
           "Share of the true boxes found, with at most 100 detections an image, averaged over IoU 0.5-0.95."),
)

PARAMS = (
    Param("model", "choice", "auto",
          "Detector: auto (small-fcos on a CPU, fasterrcnn_resnet50_fpn_v2 on a GPU), small-fcos (TrainLab's small FCOS), "
          "or one of torchvision's; built with random weights, never downloaded (see weights).",
          choices=MODELS, title="Model", group="model"),
    Param("weights", "path", "",
          "Weights already on this machine to start from: a whole detector's or only its backbone's "
          "(.safetensors, or .pth/.pt read with weights_only=True); tensors of another shape (a head for other classes) are left out.",
          title="Weights file", group="model"),
    Param("image_size", "choice", "auto",
          "Longer side the images are resized to (aspect ratio kept), in pixels; SSDlite always takes 320 x 320. "
          "auto: the training images' median longer side, at most 320 on a CPU and 512 on a GPU: small images are "
          "never blown up (a larger input costs time and shows the detector no more detail), large ones are shrunk "
          "to what the device trains in reasonable time.",
          choices=("auto", "320", "512", "640", "800"), open_choices=True, title="Image size", group="data"),
    Param("format", "choice", "auto", "Annotation format: auto (found from the files), coco, yolo or voc.",
          choices=("auto", "coco", "yolo", "voc"), title="Annotation format", group="data"),
    Param("augmentation", "choice", "auto",
          "Training augmentation, boxes moved with the pixels: none; light (horizontal flips); standard (colour jitter, "
          "zoom-out, crops that keep the boxes they cut through, flips); auto (standard from 30 epochs, else light: the heavy policy pays only over long runs).",
          choices=("auto", "none", "light", "standard"), title="Augmentation", group="data"),
    Param("hflip", "bool", True, "Random horizontal flips in training (wrong for text and left/right-specific objects).",
          title="Horizontal flip", group="data"),
    Param("val_fraction", "float", 0.2, "Share of the images held out for validation when the data has no val split.",
          minimum=0.01, maximum=0.9, title="Validation fraction", group="data"),
    Param("score_threshold", "float", 0.3, "Predictions: boxes from this score are reported (evaluation scores every box).",
          minimum=0.0, maximum=1.0, title="Score threshold", group="task"),
    Param("cross_class_iou", "float", 0.7,
          "Predictions: a box that overlaps a higher-scored box of another class by this IoU or more is dropped, so one "
          "object is reported once, under its likeliest class (the detector suppresses overlaps within a class only); "
          "1 keeps every box. Evaluation scores every box.",
          minimum=0.05, maximum=1.0, title="Overlap across classes", group="task", before=1.0),
    Param("tile", "choice", "auto",
          "Tiling for small objects on large images: the detector sees each image in overlapping windows of this many "
          "pixels at the image's own resolution (training on the windows; predictions merged across them). auto: tiles "
          "of image_size when the median box is under 5% of the image's side and images are over 1.5 x image_size; off; "
          "or the side in pixels.", choices=("auto", "off"), open_choices=True, title="Tiling", group="data"),
    Param("export", "choice", "auto",
          "Exported graph beside the weights: auto (torch.export of the backbone and head for FCOS, RetinaNet and SSDlite, "
          "model.pt2; ONNX of the whole Faster R-CNN, model.onnx, when the onnx extra is installed), torch, onnx, or off.",
          choices=("auto", "torch", "onnx", "off"), title="Exported graph", group="task", advanced=True),
    Param("memory_cache_mb", "int", 1024, "Decoded, resized images kept in memory (MB) so later epochs skip decoding (0: off).",
          minimum=0, maximum=1 << 20, title="Decoded images in memory (MB)", group="hardware", advanced=True),
    Param("num_workers", "choice", "0", "Data-loading processes (0: in the training thread).",
          choices=("0", "1", "2", "4", "8"), open_choices=True, title="Loader workers", group="hardware", advanced=True),
)  # fmt: skip

DETAILS = (
    Table("per_class", "Per class", "Average precision and recall of each class.", columns=(
        Column("class", "Class"), Column("ap", "AP@0.5:0.95", "number", "score"), Column("ap50", "AP@0.5", "number", "score"),
        Column("recall", "Recall@100", "number", "score"), Column("boxes", "True boxes", "number", "count"))),
    Series("pr_curves", "Precision-recall at IoU 0.5", "A line per class, over COCO's 101 recall points.",
           x_label="recall", y_label="precision"),
    ExampleRows("worst_images", "Images with the most errors", "True boxes and predicted boxes (from the score threshold, 0.3 until moved; kept from 0.05); "
                "errors (scores from 0.3) are missed true boxes and false boxes at IoU 0.5.", columns=(
        Column("image", "Image", "image_boxes"), Column("errors", "Errors", "number", "count"),
        Column("missed", "Missed", "number", "count"), Column("false_positives", "False boxes", "number", "count")),
        worst="errors", input_column="image"),
)  # fmt: skip

PRESETS = (
    Preset("auto", "Chosen for the machine", "small-fcos on a CPU (from scratch, fast), Faster R-CNN ResNet-50 FPN v2 on a GPU.",
           {"lr": 0.001, "batch_size": 8}),
    Preset("small-fcos", "Small FCOS", "TrainLab's small FCOS, from scratch: fast on a CPU, for small sets and small images.",
           {"lr": 0.001, "batch_size": 8}),  # as auto trains it on a CPU: one detector, one recipe
    Preset("fasterrcnn_mobilenet_v3_large_fpn", "Faster R-CNN MobileNetV3", "Two-stage detector on a light backbone.",
           {"lr": 0.0003, "batch_size": 8}),
    Preset("fasterrcnn_resnet50_fpn_v2", "Faster R-CNN ResNet-50 v2", "The strongest here; wants a GPU.",
           {"lr": 0.0002, "batch_size": 8}),
    Preset("retinanet_resnet50_fpn_v2", "RetinaNet ResNet-50 v2", "One-stage detector with focal loss; wants a GPU.",
           {"lr": 0.0002, "batch_size": 8}),
    Preset("fcos_resnet50_fpn", "FCOS ResNet-50", "Anchor-free one-stage detector; wants a GPU.", {"lr": 0.0002, "batch_size": 8}),
    Preset("ssdlite320_mobilenet_v3_large", "SSDlite MobileNetV3", "Small and fast at 320 x 320 inputs.",
           {"lr": 0.001, "batch_size": 16}),
)  # fmt: skip

SPEC = TaskSpec(
    id=TASK_ID,
    title="Object detection",
    factory="trainlab_plugins.detection.task:ObjectDetectionTask",
    description="Train a detector to find and box objects in images (COCO, YOLO or Pascal VOC annotations) and report COCO mAP.",
    params=PARAMS,
    # 12 epochs, the length of the common "1x" detection schedule: short enough that the bundled sample
    # (small-fcos at the images' own 128 px on a CPU) trains to visible boxes in minutes; training from
    # scratch on real data wants more (--epochs).
    defaults={"epochs": 12, "lr": 0.001, "batch_size": 8},
    presets=PRESETS,
    data_kind="either",
    data_help=(
        "COCO: a folder with train.json beside train/ (and val.json beside val/), or one COCO .json file; "
        "YOLO: a folder with data.yaml, images/<split>/ and labels/<split>/; "
        "Pascal VOC: a folder with Annotations/*.xml and JPEGImages/ (ImageSets/Main/<split>.txt for splits). "
        "Without a val split, val_fraction of the images is held out."
    ),
    sample_data=SAMPLE_DATA,
    family=FAMILY,
    metrics=METRICS,
    monitor="map",
    classes=False,
    details=DETAILS,
    input=IMAGE_INPUT,
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.1"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [SPEC]
