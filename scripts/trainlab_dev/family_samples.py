"""Generate the bundled text-regression and text-multilabel samples.

Run it from the repository root when a recipe changes::

    .venv/bin/python scripts/trainlab_dev/family_samples.py

* ``resources/trainlab_resources/samples/text-regression``: short restaurant reviews (English,
  Chinese, and mixed) rated from 1 to 5.  A review names one to three
  aspects (food, service, price, place, verdict), each in words of a known
  polarity from -2 to +2; the rating is 3 plus 0.9 times the weighted mean of
  those polarities, plus Gaussian noise (sd 0.25), clipped to [1, 5] and
  rounded to one decimal: made up, but learnable from the words.
* ``resources/trainlab_resources/samples/text-multilabel``: news-like texts tagged with the
  topics of the text-classification sample (sports, technology, food,
  weather): each text joins sentences of zero to three topics, so a text may
  have several tags or none (the untagged ones are everyday notices).

Both come from templates written for this project (free of third-party
rights; see the README written beside each) and are deterministic: the same
seed gives the same files.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path

if not __package__:  # run as a file: its folder's parent, scripts/, holds the trainlab_dev package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trainlab_dev.text_sample import LANGUAGE_WEIGHTS, TOPICS, fill

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "trainlab_resources" / "samples"
SPLITS = {"train": 600, "val": 160, "test": 160}
SEED = 20240612

# -- text-regression: reviews ----------------------------------------------------

# aspect -> (weight in the rating, {polarity: (English phrases, Chinese phrases)})
ASPECTS: dict[str, tuple[float, dict[int, tuple[list[str], list[str]]]]] = {
    "food": (
        1.5,
        {
            2: (["the {dish} tasted outstanding", "the {dish} tasted absolutely delicious"], ["{zdish}非常好吃", "{zdish}的味道棒极了"]),
            1: (["the {dish} tasted good", "the {dish} tasted fresh"], ["{zdish}味道不错", "{zdish}挺好吃的"]),
            0: (["the {dish} tasted okay", "the {dish} tasted average"], ["{zdish}一般般", "{zdish}味道普通"]),
            -1: (["the {dish} tasted bland", "the {dish} arrived a bit cold"], ["{zdish}有点淡", "{zdish}上桌时有点凉"]),
            -2: (["the {dish} tasted terrible", "the {dish} tasted awful"], ["{zdish}太难吃了", "{zdish}完全没法吃"]),
        },
    ),
    "service": (
        1.0,
        {
            2: (["the staff were wonderful", "the service was superb"], ["服务员特别热情", "服务一流"]),
            1: (["the staff were friendly", "the service was quick"], ["服务员很友好", "上菜很快"]),
            0: (["the service was fine", "the staff were polite enough"], ["服务还行", "服务员态度一般"]),
            -1: (["the service was slow", "we waited a long time"], ["上菜很慢", "等了很久才点上菜"]),
            -2: (["the staff were rude", "the service was awful"], ["服务员态度很差", "服务糟糕透了"]),
        },
    ),
    "price": (
        1.0,
        {
            2: (["it was great value", "the prices were a bargain"], ["性价比超高", "价格非常实惠"]),
            1: (["the prices were fair", "it was good value"], ["价格公道", "性价比不错"]),
            0: (["the prices were normal", "it cost what you would expect"], ["价格中规中矩", "价格和别家差不多"]),
            -1: (["it was a little pricey", "the portions were small for the price"], ["价格有点贵", "分量太少了"]),
            -2: (["it was a rip-off", "it was far too expensive"], ["价格贵得离谱", "完全不值这个价"]),
        },
    ),
    "place": (
        0.75,
        {
            2: (["the place was beautiful", "the view was stunning"], ["环境特别优雅", "景色美极了"]),
            1: (["the room was cosy", "the place was clean"], ["环境很舒适", "店里很干净"]),
            0: (["the place was plain", "the room was quiet"], ["环境普通", "店里比较安静"]),
            -1: (["the room was noisy", "the tables were cramped"], ["店里有点吵", "座位太挤"]),
            -2: (["the place was dirty", "the room smelled bad"], ["店里很脏", "环境脏乱差"]),
        },
    ),
    "verdict": (
        1.25,
        {
            2: (["we will definitely be back", "highly recommended"], ["强烈推荐", "下次一定还来"]),
            1: (["worth a visit", "we would come again"], ["值得一试", "还会再来"]),
            0: (["nothing special", "it was an ordinary evening"], ["没什么特别的", "感觉很平常"]),
            -1: (["probably not again", "a bit of a letdown"], ["有点失望", "大概不会再来了"]),
            -2: (["never again", "avoid this place"], ["再也不来了", "千万别来"]),
        },
    ),
}
REVIEW_LANGUAGES = {"en": 0.45, "zh": 0.45, "mix": 0.10}
ASPECT_COUNTS = {1: 0.3, 2: 0.45, 3: 0.25}
NOISE_SD = 0.25


def review(rng: random.Random) -> tuple[str, float]:
    food = TOPICS["food"]
    slots = {"dish": rng.choice(food["dish"]), "zdish": rng.choice(food["zdish"])}
    language = rng.choices(list(REVIEW_LANGUAGES), weights=list(REVIEW_LANGUAGES.values()))[0]
    count = rng.choices(list(ASPECT_COUNTS), weights=list(ASPECT_COUNTS.values()))[0]
    aspects = rng.sample(list(ASPECTS), count)
    phrases_en, phrases_zh, verdicts, total, weights = [], [], [], 0.0, 0.0
    for aspect in aspects:
        weight, levels = ASPECTS[aspect]
        polarity = rng.choice(list(levels))
        english, chinese = levels[polarity]
        in_chinese = language == "zh" or (language == "mix" and rng.random() < 0.5)
        phrase = rng.choice(chinese if in_chinese else english).format(**slots)
        if aspect == "verdict":  # a sentence of its own, at the end
            verdicts.append(phrase + "。" if in_chinese else phrase[0].upper() + phrase[1:] + ".")
        else:
            (phrases_zh if in_chinese else phrases_en).append(phrase)
        total += weight * polarity
        weights += weight
    parts = []
    if phrases_en:
        sentence = ", ".join(phrases_en[:-1]) + (" and " if len(phrases_en) > 1 else "") + phrases_en[-1]
        parts.append(sentence[0].upper() + sentence[1:] + ".")
    if phrases_zh:
        parts.append("，".join(phrases_zh) + "。")
    rng.shuffle(parts)
    parts += verdicts
    rating = 3.0 + 0.9 * total / weights + rng.gauss(0.0, NOISE_SD)
    return " ".join(parts), round(min(5.0, max(1.0, rating)), 1)


def regression_rows(seed: int) -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(seed)
    rows: dict[str, float] = {}
    while len(rows) < sum(SPLITS.values()):
        text, rating = review(rng)
        rows.setdefault(text, rating)  # a repeated text keeps its first rating
    return _cut([(text, f"{rating:.1f}") for text, rating in rows.items()], rng)


# -- text-multilabel: topic tags ---------------------------------------------------

NOTICES = [
    "The meeting has been moved to Thursday afternoon.",
    "Please remember to bring your ID card tomorrow.",
    "The library will close early for maintenance.",
    "The new bus route starts next Monday.",
    "Residents are asked to sort their rubbish before eight.",
    "The museum opens a small exhibition of old maps.",
    "Parents can collect the school reports on Friday.",
    "会议改到周四下午举行。",
    "请记得明天带上身份证。",
    "图书馆因设备维护将提前闭馆。",
    "新的公交线路下周一开通。",
    "小区提醒居民晚上八点前做好垃圾分类。",
    "博物馆推出了一个古地图小展览。",
    "家长可以在周五领取成绩单。",
    "The post office is closed on the public holiday.",
    "Volunteers are needed to plant trees in the park.",
    "停车场本周六进行划线施工。",
    "社区活动中心下月起延长开放时间。",
]
TOPIC_COUNTS = {0: 0.08, 1: 0.47, 2: 0.35, 3: 0.10}
TAG_LANGUAGES = {k: v for k, v in LANGUAGE_WEIGHTS.items() if k != "cross"}  # "cross" sentences mention a second topic


def tagged_text(rng: random.Random) -> tuple[str, list[str]]:
    every_slot = {k: v for spec in TOPICS.values() for k, v in spec.items() if k not in LANGUAGE_WEIGHTS}
    count = rng.choices(list(TOPIC_COUNTS), weights=list(TOPIC_COUNTS.values()))[0]
    topics = sorted(rng.sample(list(TOPICS), count))
    sentences = []
    for topic in topics:
        spec = TOPICS[topic]
        slots = {**every_slot, **{k: v for k, v in spec.items() if k not in LANGUAGE_WEIGHTS}}
        language = rng.choices(list(TAG_LANGUAGES), weights=list(TAG_LANGUAGES.values()))[0]
        sentences.append(fill(rng.choice(spec[language]), slots, rng))
    # one or two notices make an untagged text, and pad some tagged ones, so
    # that neither length nor an everyday sentence gives the tags away
    if not topics:
        sentences += rng.sample(NOTICES, rng.choice((1, 2)))
    elif rng.random() < 0.2:
        sentences.append(rng.choice(NOTICES))
    rng.shuffle(sentences)
    return " ".join(sentences), topics


def multilabel_rows(seed: int) -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {}
    while len(rows) < sum(SPLITS.values()):
        text, topics = tagged_text(rng)
        rows.setdefault(text, topics)
    return _cut([(text, ";".join(topics)) for text, topics in rows.items()], rng)


def _cut(rows: list[tuple[str, str]], rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    rng.shuffle(rows)
    out, start = {}, 0
    for split, size in SPLITS.items():
        out[split] = rows[start : start + size]
        start += size
    return out


README = """# {title}

{body}

| split | rows |
|---|---|
{table}

Columns: {columns} (UTF-8 CSV with a header).

Generated by `scripts/trainlab_dev/family_samples.py` (in TrainLab's source
repository) from templates written for TrainLab; dish, team and company
names are invented or generic.  Licence: the same as TrainLab (Apache-2.0);
no third-party text.
"""

SAMPLES_MADE = {
    "text-regression": (
        regression_rows,
        "Text regression sample",
        "Short restaurant reviews in English, Chinese and mixed Chinese-English, each\n"
        "rated from 1.0 to 5.0, for the quick start, demos and tests of the\n"
        "`text-regression` task.  The ratings are made up but follow the words: a\n"
        "review names one to three aspects (food, service, price, place, verdict)\n"
        "in words of a known polarity, and its rating is 3 plus 0.9 times their\n"
        "weighted mean polarity (-2 to +2), plus noise (sd 0.25), clipped to [1, 5].",
        "`text`, `label` (the rating)",
    ),
    "text-multilabel": (
        multilabel_rows,
        "Text multi-label sample",
        "News-like texts tagged with the topics `sports`, `technology`, `food` and\n"
        "`weather` (those of the text-classification sample), in English, Chinese and\n"
        "mixed Chinese-English, for the quick start, demos and tests of the\n"
        "`text-multilabel` task.  Each text joins sentences on zero to three topics\n"
        "and carries their tags; a text with none is an everyday notice.",
        "`text`, `labels` (the tags joined by `;`, empty for none)",
    ),
}


def write(name: str, out: Path, seed: int) -> dict[str, int]:
    make, title, body, columns = SAMPLES_MADE[name]
    splits = make(seed)
    out.mkdir(parents=True, exist_ok=True)
    label_column = "labels" if name == "text-multilabel" else "label"
    for split, rows in splits.items():
        with open(out / f"{split}.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", label_column])
            writer.writerows(rows)
    table = "\n".join(f"| {split} | {len(rows)} |" for split, rows in splits.items())
    (out / "README.md").write_text(README.format(title=title, body=body, table=table, columns=columns), encoding="utf-8")
    return {split: len(rows) for split, rows in splits.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=SAMPLES, help="the folder that gets text-regression/ and text-multilabel/")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    for name in SAMPLES_MADE:
        counts = write(name, args.samples / name, args.seed)
        print(f"wrote {', '.join(f'{s}: {n}' for s, n in counts.items())} rows to {args.samples / name}")


if __name__ == "__main__":
    main()
