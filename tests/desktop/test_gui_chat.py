"""Try-it as a chat on tiny local model folders: streaming off the GUI thread, stop, clear, history, compare."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from helpers import make_decoder_folder, run_trainlab


@pytest.fixture(scope="module")
def chat_folders(tmp_path_factory):
    """Two tiny Qwen2 chat models (a ChatML template), the same tokenizer, different random weights."""
    import shutil

    import torch
    from trainlab_plugins.textgen.templates import CHATML
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    root = tmp_path_factory.mktemp("chat-models")
    tuned = make_decoder_folder(root / "tuned", seed=0)
    tok = AutoTokenizer.from_pretrained(str(tuned))
    tok.chat_template = CHATML
    tok.save_pretrained(str(tuned))
    other = Path(shutil.copytree(tuned, root / "other"))
    torch.manual_seed(1)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(other))).save_pretrained(str(other))
    return tuned, other


@pytest.fixture
def chat(qtbot, monkeypatch):
    import trainlab_desktop.tryit.chat as chat_module
    from trainlab_desktop.tryit.page import TryItPanel

    monkeypatch.setattr(chat_module, "UPDATE_SECONDS", 0.0)  # every piece drawn: the updates can be counted
    panel = TryItPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 560)
    panel.show()
    yield panel.chat, panel
    panel.chat.stop()
    qtbot.waitUntil(lambda: not panel.chat.busy(), timeout=20_000)


def _visible(text):
    """The letters and digits of a text (a random model writes control characters the view draws otherwise)."""
    return "".join(ch for ch in text if ch.isalnum())


def _ask(qtbot, chat, text, timeout=30_000):
    with qtbot.waitSignal(chat.answered, timeout=timeout):
        assert chat.send(text)


def test_a_model_folder_answers_streaming_from_a_thread_that_is_not_the_gui_thread(qtbot, chat, chat_folders, monkeypatch):
    from transformers import GenerationMixin

    panel_chat, panel = chat
    threads = []
    real = GenerationMixin.generate

    def recording(self, *args, **kwargs):
        threads.append(threading.current_thread())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(GenerationMixin, "generate", recording)
    panel.open_model_folder(str(chat_folders[0]))
    assert panel.is_chat()
    panel_chat.max_new_tokens.setValue(40)
    panel_chat.system_edit.setText("Answer briefly.")
    _ask(qtbot, panel_chat, "What is two plus two?")
    assert threads and all(t is not threading.main_thread() for t in threads)
    assert panel_chat.updates >= 3  # the answer arrived in pieces, drawn as they came
    answer = panel_chat.shown_answers()[0]
    assert _visible(answer) and _visible(answer) in _visible(panel_chat.columns[0].view.toPlainText())
    assert "Answer briefly." in panel_chat.last_prompts[0]  # the system prompt, through the chat template
    assert "<|im_start|>assistant" in panel_chat.last_prompts[0]

    # the second turn is given the first, question and answer, then the new question
    _ask(qtbot, panel_chat, "And three plus three?")
    prompt = panel_chat.last_prompts[0]
    assert prompt.index("What is two plus two?") < prompt.index(answer.strip()[:10]) < prompt.index("And three plus three?")
    assert [m["role"] for m in panel_chat.histories[0]] == ["user", "assistant", "user", "assistant"]

    panel_chat.clear_button.click()
    assert panel_chat.histories == [[]]
    assert panel_chat.columns[0].view.toPlainText() == ""
    _ask(qtbot, panel_chat, "Hello")
    assert "two plus two" not in panel_chat.last_prompts[0]


def test_stop_ends_a_long_answer(qtbot, chat, chat_folders):
    panel_chat, panel = chat
    panel.open_model_folder(str(chat_folders[0]))
    panel_chat.max_new_tokens.setValue(20000)
    assert panel_chat.send("Write a very long story.")
    qtbot.waitUntil(lambda: panel_chat.updates >= 3, timeout=30_000)
    assert panel_chat.busy() and panel_chat.stop_button.isEnabled()
    with qtbot.waitSignal(panel_chat.answered, timeout=20_000):
        panel_chat.stop_button.click()
    assert not panel_chat.busy()
    tokenizer = panel_chat._models[panel_chat.sources[0]].predictor.tokenizer
    written = len(tokenizer(panel_chat.shown_answers()[0], add_special_tokens=False)["input_ids"])
    assert 0 < written < 2000
    assert panel_chat.status.text() == "Stopped."


def test_compare_answers_the_same_prompt_side_by_side(qtbot, chat, chat_folders):
    panel_chat, panel = chat
    panel.open_model_folder(str(chat_folders[0]))
    panel_chat.max_new_tokens.setValue(12)
    panel_chat.compare_with(str(chat_folders[1]))
    qtbot.waitUntil(panel_chat.ready, timeout=30_000)
    assert panel_chat.together and "at once" in panel_chat.status.text()
    assert panel_chat.columns[1].isVisible() and panel_chat.single_button.isVisible()
    _ask(qtbot, panel_chat, "What is two plus two?")
    first, second = panel_chat.shown_answers()
    assert first and second and first != second  # two models, two answers
    assert _visible(first) in _visible(panel_chat.columns[0].view.toPlainText())
    assert _visible(second) in _visible(panel_chat.columns[1].view.toPlainText())
    assert all("What is two plus two?" in p for p in panel_chat.last_prompts)
    panel_chat.single_button.click()
    assert not panel_chat.columns[1].isVisible() and len(panel_chat.sources) == 1


def test_models_that_do_not_fit_together_answer_one_after_the_other(qtbot, chat, chat_folders, monkeypatch):
    import math

    import trainlab.engine.chat as engine_chat

    needs = sum(engine_chat.model_bytes(f) for f in chat_folders)
    boundary = math.ceil(needs * engine_chat.HEADROOM)
    assert engine_chat.fits_together([needs], boundary) and not engine_chat.fits_together([needs], boundary - 1)
    monkeypatch.setattr(engine_chat, "available_memory", lambda device: boundary - 1)
    panel_chat, panel = chat
    panel.open_model_folder(str(chat_folders[0]))
    panel_chat.max_new_tokens.setValue(12)
    panel_chat.compare_with(str(chat_folders[1]))
    qtbot.waitUntil(panel_chat.ready, timeout=30_000)
    assert not panel_chat.together and "one after the other" in panel_chat.status.text()
    held = []
    panel_chat.updated.connect(lambda column: held.append((column, len(panel_chat._models))))
    with qtbot.waitSignal(panel_chat.answered, timeout=30_000):
        assert panel_chat.send("What is two plus two?")
        assert "one after the other" in panel_chat.status.text()
    assert all(a for a in panel_chat.shown_answers())
    columns = [c for c, _ in held]
    assert columns == sorted(columns) and set(columns) == {0, 1}  # the first answered wholly, then the second
    assert max(n for _, n in held) == 1  # never both in memory


def test_a_base_model_without_a_chat_template_is_compared_through_the_fine_tunes(qtbot, chat, chat_folders, tmp_path):
    import shutil

    plain = Path(shutil.copytree(chat_folders[1], tmp_path / "plain-base"))
    (plain / "chat_template.jinja").unlink()
    panel_chat, panel = chat
    panel.open_model_folder(str(plain))  # alone, it cannot chat, and says why
    _ask(qtbot, panel_chat, "Hello")
    assert "no chat template" in panel_chat.error and "no chat template" in panel_chat.status.text()
    assert panel_chat.histories == [[]] and not panel_chat.busy()
    panel.open_model_folder(str(chat_folders[0]))
    panel_chat.max_new_tokens.setValue(6)
    panel_chat.compare_with(str(plain))
    qtbot.waitUntil(panel_chat.ready, timeout=30_000)
    _ask(qtbot, panel_chat, "What is two plus two?")
    assert not panel_chat.error
    assert all(p.startswith("<|im_start|>user\nWhat is two plus two?") for p in panel_chat.last_prompts)


def test_a_text_generation_run_names_its_base_model_to_compare_with(chat_folders, tmp_path):
    from trainlab.engine.chat import ChatSource, base_source, chat_source

    tuned = chat_source(chat_folders[0])
    assert tuned == ChatSource(chat_folders[0].resolve()) and base_source(tuned) is None
    (chat_folders[0] / "trainlab.json").write_text(json.dumps({"base_model": str(chat_folders[1])}), encoding="utf-8")
    try:
        assert base_source(tuned) == ChatSource(chat_folders[1].resolve())
    finally:
        (chat_folders[0] / "trainlab.json").unlink()


def test_chat_compare_in_the_terminal_gives_both_answers_labelled(chat_folders):
    tuned, other = chat_folders
    result = run_trainlab(
        "chat", str(tuned), "--compare", str(other), "--max-new-tokens", "5",
        input="What is two plus two?\nAnd three?\n/exit\n", env={"OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith(("tuned> ", "other> "))]
    assert [line.split(">")[0] for line in lines] == ["tuned", "other", "tuned", "other"]
    assert "comparing tuned" in result.stderr and "answer at once" in result.stderr


def test_the_real_windows_try_it_page_chats_with_a_model_folder_and_closing_ends_an_answer(qtbot, window, chat_folders):
    window.show_page("tryit")
    window.tryit.open_model_folder(str(chat_folders[0]))
    panel_chat = window.tryit.chat
    assert window.tryit.is_chat() and panel_chat.isVisible()
    panel_chat.prompt_edit.setPlainText("What is two plus two?")
    panel_chat.max_new_tokens.setValue(20000)
    panel_chat.send_button.click()
    assert panel_chat.prompt_edit.toPlainText() == ""
    qtbot.waitUntil(lambda: panel_chat.updates >= 2, timeout=30_000)
    with qtbot.waitSignal(panel_chat.answered, timeout=20_000):
        window._shutdown()  # what closing the window does: the answer ends at its next token
    assert _visible(panel_chat.shown_answers()[0])


def test_a_text_generation_runs_try_it_is_a_chat_that_compares_with_its_base_model(qtbot, chat, chat_folders, tmp_path):
    import shutil

    base = Path(shutil.copytree(chat_folders[1], tmp_path / "base-model"))
    (base / "chat_template.jinja").unlink()  # a base model: the run gave it ChatML
    run = tmp_path / "runs" / "sft"
    shutil.copytree(chat_folders[0], run / "model")
    record = {"id": "sft", "task": "text-generation", "status": "completed", "parameters": {"model": str(base), "template": "chatml"}}
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    panel_chat, panel = chat
    panel.set_run(str(run))
    assert panel.is_chat() and panel_chat.sources[0].run_dir == run.resolve()
    assert panel_chat.compare_base_button.isEnabled()
    panel_chat.max_new_tokens.setValue(6)
    panel_chat.compare_base_button.click()
    qtbot.waitUntil(panel_chat.ready, timeout=30_000)
    assert panel_chat.columns[1].title.text() == "Base model: base-model"
    _ask(qtbot, panel_chat, "What is two plus two?")
    assert not panel_chat.error and all(p.startswith("<|im_start|>user\nWhat is two plus two?") for p in panel_chat.last_prompts)
    panel.set_run(None)
    assert not panel.is_chat()
