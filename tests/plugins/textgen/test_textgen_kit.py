"""text-generation passes the plugin kit, as a third-party plugin's CI would run it (tiny-chat, a few CPU steps, the window too)."""

from __future__ import annotations

import json
from pathlib import Path

from trainlab.testing import PluginConformance

class TestTextGenerationPlugin(PluginConformance):
    plugin = "text-generation"
    supports_window = True  # the start page offers it, a run from the window, try-it answers
    run_params = {"max_length": 48, "batch_size": 4, "epochs": 3, "lr": 5e-3, "eval_generations": 2, "max_new_tokens": 4}

    def make_tiny_data(self, task_id, folder):
        path = Path(folder) / "chats.jsonl"
        rows = [{"messages": [{"role": "user", "content": q}, {"role": "assistant", "content": a}]} for q, a in [("What color is snow?", "Snow is white."), ("天空是什么颜色？", "天空是蓝色的。")] * 8]
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        return path

    def make_bad_data(self, task_id, folder):
        path = Path(folder) / "bad.jsonl"
        path.write_text('{"messages": [{"role": "robot", "content": "x"}]}\n', encoding="utf-8")
        return path

    def predict_inputs(self, task_id, data):
        return ["What color is snow?", "天空是什么颜色？"]
