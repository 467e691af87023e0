"""Generate the bundled text sample (``resources/trainlab_resources/samples/text``).

Run it from the repository root when the recipe changes::

    .venv/bin/python scripts/trainlab_dev/text_sample.py

Short news-like sentences about four topics (sports, technology, food,
weather) in English, Chinese (simplified and some traditional) and mixed
Chinese-English, assembled from templates written for this project, so the
set is free of third-party rights (see the README written beside it).  About
one sentence in eight also mentions another topic (a match postponed by rain
is still sports), so the set is not trivially separable by keywords.
Deterministic: the same seed gives the same files.
"""

from __future__ import annotations

import argparse
import csv
import random
from pathlib import Path

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "resources" / "trainlab_resources" / "samples" / "text"

# Shared filler keeps the classes from being separable by one word alone.
EN_WHEN = ["Today", "Yesterday", "This morning", "Last night", "On Sunday", "This week", "Once again", "According to reports,"]
ZH_WHEN = ["今天", "昨天", "今早", "昨晚", "周末", "本周", "据报道，", "最近"]

TOPICS: dict[str, dict[str, list[str]]] = {
    "sports": {
        "en": [
            "{when} the {team} beat their rivals {score} in a tense {sport} match.",
            "{when} the {team} coach praised the {player} after the {sport} final.",
            "Fans cheered as the {player} scored twice for the {team}.",
            "The {team} will play the {sport} semi-final at the national stadium.",
            "{when} a young {player} broke the record in the {event}.",
            "Injury forces the {team} {player} to miss the {sport} season.",
            "The {event} drew thousands of runners and loud crowds.",
        ],
        "zh": [
            "{when}{zteam}以{score}战胜对手，赢得了{zsport}比赛。",
            "{when}{zteam}的{zplayer}在{zsport}决赛中打进关键一球。",
            "{zteam}主教练称赞了{zplayer}在比赛中的表现。",
            "{when}{zevent}吸引了上万名选手参加，观众热情高涨。",
            "{zplayer}受伤，将缺席本赛季剩余的{zsport}比赛。",
            "{zteam}下周将在主场迎战{zteam2}，门票已经售罄。",
            "這場{zsport}比賽非常精彩，{zteam}最後逆轉獲勝。",
        ],
        "mix": [
            "{zteam}在 {league} 比赛中以{score}获胜，{zplayer}表现出色。",
            "{when}的 {league} 总决赛，{zteam}夺得冠军。",
            "这位 {player} 在 {event} 上刷新了个人最好成绩。",
        ],
        "cross": [
            "The {sport} final was postponed because of {condition}.",
            "{zsport}比赛因{zcondition}推迟到明天下午。",
            "After the match the {team} players celebrated with {dish}.",
            "{zteam}的球员赛后一起去吃了{zdish}，庆祝胜利。",
            "The {team} now track every {player} with a {device} during training.",
        ],
        "team": ["Lions", "Tigers", "Rovers", "City", "United", "Eagles", "Wolves", "Sharks"],
        "sport": ["football", "basketball", "tennis", "volleyball", "hockey", "badminton"],
        "player": ["striker", "goalkeeper", "captain", "midfielder", "sprinter", "rookie", "defender"],
        "event": ["city marathon", "100 metre final", "swimming relay", "cycling race", "Olympic trials"],
        "league": ["NBA", "Premier League", "CBA", "World Cup", "Champions League"],
        "zteam": ["北京队", "上海队", "广州队", "山东队", "辽宁队", "浙江队", "四川队"],
        "zteam2": ["江苏队", "天津队", "河南队", "深圳队"],
        "zsport": ["足球", "篮球", "排球", "网球", "羽毛球", "乒乓球"],
        "zplayer": ["前锋", "守门员", "队长", "后卫", "新秀", "主力中锋"],
        "zevent": ["城市马拉松", "全国游泳锦标赛", "自行车公路赛", "田径大奖赛"],
        "score": ["2:1", "3:0", "1:0", "98:95", "3:2", "4:1"],
    },
    "technology": {
        "en": [
            "{when} {company} released a new {device} with a faster {part}.",
            "The latest {software} update fixes bugs and improves {part} performance.",
            "{company} engineers showed a {device} that runs large AI models offline.",
            "Reviewers say the new {device} has excellent battery life and a bright screen.",
            "{when} researchers unveiled a {part} that uses half the power.",
            "A security flaw in the {software} lets attackers read private data.",
            "Developers can now train neural networks on the {device} without the cloud.",
        ],
        "zh": [
            "{when}{zcompany}发布了新款{zdevice}，搭载更快的{zpart}。",
            "最新的{zsoftware}更新修复了漏洞，并提升了{zpart}的性能。",
            "{zcompany}推出的{zdevice}可以离线运行大型人工智能模型。",
            "评测显示，这款{zdevice}的续航和屏幕表现都很出色。",
            "研究人员研发出一种功耗减半的新型{zpart}。",
            "{zsoftware}被发现存在安全漏洞，用户数据可能泄露。",
            "這款{zdevice}採用了全新的{zpart}，運算速度大幅提升。",
        ],
        "mix": [
            "{zcompany}发布了新的 {chip}，AI 训练速度提升了一倍。",
            "这款 {device} 支持 {protocol}，下载速度非常快。",
            "{when}，{company} 开源了自家的 {software} 框架。",
        ],
        "cross": [
            "A new app from {company} predicts {condition} for farmers using AI.",
            "外卖 App 更新后，点{zdish}的速度快了一倍。",
            "{company} will sponsor the {team} with smart watches for every {player}.",
            "这款{zdevice}可以实时显示{zregion}的天气和空气质量。",
            "Restaurants now take orders for {dish} through a {device} at each table.",
        ],
        "company": ["Acme", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Devices"],
        "device": ["smartphone", "laptop", "tablet", "smartwatch", "workstation", "router"],
        "part": ["processor", "graphics chip", "memory", "camera sensor", "battery", "modem"],
        "software": ["operating system", "browser", "app store", "compiler", "database"],
        "chip": ["GPU", "CPU", "NPU", "TPU", "SoC"],
        "protocol": ["Wi-Fi 7", "5G", "USB-C", "Bluetooth 6"],
        "zcompany": ["华科公司", "星河科技", "云端实验室", "未来电子", "蓝海软件"],
        "zdevice": ["手机", "笔记本电脑", "平板电脑", "智能手表", "路由器", "显卡"],
        "zpart": ["处理器", "芯片", "内存", "摄像头", "电池", "操作系统"],
        "zsoftware": ["操作系统", "浏览器", "应用商店", "数据库", "编译器"],
    },
    "food": {
        "en": [
            "{when} the new restaurant served {dish} with fresh {ingredient}.",
            "This {dish} recipe needs {ingredient}, garlic and a little {flavour}.",
            "The chef recommends {dish} cooked slowly with {ingredient}.",
            "Customers queued for an hour to taste the {flavour} {dish}.",
            "{when} the night market sold {dish} and sweet {dessert}.",
            "Add the {ingredient} and simmer the soup for twenty minutes.",
            "Critics loved the {dessert} but found the {dish} too {flavour}.",
        ],
        "zh": [
            "{when}新开的餐厅推出了{zdish}，用料是新鲜的{zingredient}。",
            "做这道{zdish}需要{zingredient}、大蒜和少许{zflavour}。",
            "厨师建议用小火慢炖{zingredient}，味道更加{zflavour}。",
            "顾客排了一个小时的队，只为尝一口{zdish}。",
            "{when}夜市上的{zdish}和{zdessert}卖得特别好。",
            "把{zingredient}放进锅里，再煮二十分钟就可以出锅了。",
            "這家店的{zdish}非常好吃，{zdessert}也很受歡迎。",
        ],
        "mix": [
            "这家 {cuisine} 餐厅的{zdish}很{zflavour}，推荐大家试试。",
            "{when}在 {cuisine} restaurant 吃了{zdish}，味道不错。",
            "这份 {dish} 的做法很简单，只需要{zingredient}。",
        ],
        "cross": [
            "On a day of {condition}, nothing beats a bowl of hot {dish}.",
            "下雨天最适合和朋友一起吃{zdish}。",
            "{team} fans queue for the {flavour} {dish} sold outside the stadium.",
            "这家餐厅用机器人做{zdish}，吸引了很多年轻人。",
            "The bakery uses a {device} app to sell {dessert} before closing time.",
        ],
        "dish": ["noodles", "dumplings", "fried rice", "hot pot", "curry", "roast duck", "pizza"],
        "ingredient": ["beef", "tofu", "mushrooms", "shrimp", "tomatoes", "chicken", "spinach"],
        "flavour": ["spicy", "sweet", "salty", "sour", "savoury"],
        "dessert": ["mango pudding", "ice cream", "egg tarts", "cheesecake", "sesame balls"],
        "cuisine": ["Sichuan", "Cantonese", "Italian", "Thai", "Japanese", "Korean"],
        "zdish": ["牛肉面", "饺子", "炒饭", "火锅", "烤鸭", "麻婆豆腐", "小笼包"],
        "zingredient": ["牛肉", "豆腐", "蘑菇", "虾仁", "西红柿", "鸡肉", "青菜"],
        "zflavour": ["香辣", "鲜美", "清淡", "酸甜", "浓郁"],
        "zdessert": ["芒果布丁", "冰淇淋", "蛋挞", "汤圆", "月饼"],
    },
    "weather": {
        "en": [
            "{when} {condition} is expected across the {region} with highs of {temp}.",
            "Forecasters warn of {condition} and strong winds in the {region}.",
            "A {season} storm brought {condition} to the {region} overnight.",
            "Temperatures will drop to {temp} as cold air moves into the {region}.",
            "{when} the {region} saw its hottest {season} day on record.",
            "Residents were told to carry umbrellas because of {condition}.",
            "The weather service issued a warning for {condition} this weekend.",
        ],
        "zh": [
            "{when}{zregion}将出现{zcondition}，最高气温{ztemp}。",
            "气象台发布预警，{zregion}未来三天有{zcondition}。",
            "受冷空气影响，{zregion}气温将降至{ztemp}。",
            "{when}{zregion}迎来今年{zseason}最强的一场{zcondition}。",
            "出门请带好雨伞，{zregion}午后有{zcondition}。",
            "{zregion}的空气湿度很高，夜间可能有大雾。",
            "{zregion}明天{zcondition}，氣溫{ztemp}，請注意保暖。",
        ],
        "mix": [
            "天气预报说{zregion}明天有{zcondition}，温度大约 {temp}。",
            "{when}{zregion}的 AQI 超过 200，伴有{zcondition}。",
            "Typhoon {storm} 将在周末影响{zregion}，请做好防范。",
        ],
        "cross": [
            "{condition} in the {region} may cancel this weekend's {sport} games.",
            "受{zcondition}影响，{zregion}多场{zsport}比赛被迫取消。",
            "{condition} has pushed up the price of {ingredient} in the {region}.",
            "{zcondition}导致{zregion}部分地区停电，手机信号中断。",
            "Satellites and a new {part} help forecasters see {condition} coming.",
        ],
        "condition": ["heavy rain", "snow", "thunderstorms", "fog", "hail", "sunshine", "drizzle"],
        "region": ["north", "coast", "mountains", "south-west", "city centre", "river valley"],
        "season": ["summer", "winter", "spring", "autumn"],
        "temp": ["35 degrees", "minus 5 degrees", "18 degrees", "28 degrees", "2 degrees"],
        "storm": ["Haikui", "Mangkhut", "Lekima", "Doksuri"],
        "zregion": ["华北地区", "江南地区", "东北地区", "沿海城市", "西南山区", "珠江三角洲"],
        "zcondition": ["大雨", "暴雪", "雷阵雨", "大雾", "冰雹", "大风", "小雨"],
        "zseason": ["夏季", "冬季", "春季", "秋季"],
        "ztemp": ["35度", "零下5度", "18度", "28度", "2度"],
    },
}

SPLITS = {"train": 600, "val": 160, "test": 160}  # rows per split, all topics together
LANGUAGE_WEIGHTS = {"en": 0.36, "zh": 0.36, "mix": 0.16, "cross": 0.12}  # cross: mentions another topic too


def fill(template: str, slots: dict[str, list[str]], rng: random.Random) -> str:
    values = {key: rng.choice(options) for key, options in slots.items()}
    values["when"] = rng.choice(EN_WHEN)
    values["zwhen"] = rng.choice(ZH_WHEN)
    if "{when}" in template and any("\u4e00" <= ch <= "\u9fff" for ch in template):
        values["when"] = rng.choice(ZH_WHEN)
    return template.format(**values)


def generate(seed: int = 20240611) -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(seed)
    total = sum(SPLITS.values())
    per_topic = total // len(TOPICS)
    rows: list[tuple[str, str]] = []
    every_slot = {k: v for spec in TOPICS.values() for k, v in spec.items() if k not in LANGUAGE_WEIGHTS}
    for label, spec in TOPICS.items():
        # a topic's own slot lists win; cross templates borrow the others'
        slots = {**every_slot, **{k: v for k, v in spec.items() if k not in LANGUAGE_WEIGHTS}}
        seen: set[str] = set()
        while len(seen) < per_topic:
            language = rng.choices(list(LANGUAGE_WEIGHTS), weights=list(LANGUAGE_WEIGHTS.values()))[0]
            text = fill(rng.choice(spec[language]), slots, rng)
            if text not in seen:
                seen.add(text)
                rows.append((text, label))
    rng.shuffle(rows)
    out, start = {}, 0
    for split, size in SPLITS.items():
        out[split] = rows[start : start + size]
        start += size
    return out


README = """# Text classification sample

Short news-like sentences about four topics (`sports`, `technology`, `food`,
`weather`) in English, Chinese (simplified, with some traditional) and mixed
Chinese-English, for the quick start, demos and tests of the
`text-classification` task.  About one sentence in eight also mentions
another topic (a match postponed by rain is labelled `sports`).

| split | rows |
|---|---|
{table}

Columns: `text`, `label` (UTF-8 CSV with a header).

Generated by `scripts/trainlab_dev/text_sample.py` (in TrainLab's source
repository) from templates written for TrainLab; names of teams, companies
and storms are invented or generic.  Licence: the same as TrainLab
(Apache-2.0); no third-party text.
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=20240611)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    splits = generate(args.seed)
    for split, rows in splits.items():
        with open(args.out / f"{split}.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    table = "\n".join(f"| {split} | {len(rows)} |" for split, rows in splits.items())
    (args.out / "README.md").write_text(README.format(table=table), encoding="utf-8")
    print(f"wrote {', '.join(f'{s}: {len(r)}' for s, r in splits.items())} rows to {args.out}")


if __name__ == "__main__":
    main()
