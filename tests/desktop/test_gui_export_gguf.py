"""The results page of a text-generation run exports it for llama.cpp and Ollama."""

from __future__ import annotations

import json

import pytest

from helpers import make_decoder_folder

pytest.importorskip("gguf", reason="the GGUF export needs the gguf extra (pip install 'trainlab[gguf]')")


def _run_folder(root, family="text-generation"):
    run = root / "run"
    make_decoder_folder(run / "model")
    record = {"id": "tg-1", "task": "text-generation", "family": family, "status": "completed", "parameters": {}}
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return run


def test_a_text_generation_run_exports_gguf_and_a_modelfile_from_its_results(qtbot, tmp_path):
    from trainlab_desktop.results.page import ResultsView

    run = _run_folder(tmp_path)
    view = ResultsView()
    qtbot.addWidget(view)
    view.show()
    view.load_run(str(run))
    button = view.export_gguf
    assert button.isVisible()
    button.q8_action.trigger()
    qtbot.waitUntil(lambda: not button.busy and "Wrote" in view.export_note.text(), timeout=60_000)
    assert (run / "model.gguf").stat().st_size > 0 and (run / "Modelfile").is_file()
    assert str(run / "model.gguf") in view.export_note.text()

    import gguf

    reader = gguf.GGUFReader(run / "model.gguf")
    assert any(t.tensor_type == gguf.GGMLQuantizationType.Q8_0 for t in reader.tensors)


def test_the_export_is_offered_only_for_a_text_generation_run_with_its_model(qtbot, tmp_path):
    from trainlab_desktop.results.page import ResultsView

    view = ResultsView()
    qtbot.addWidget(view)
    view.show()
    other = _run_folder(tmp_path / "a", family="regression")
    view.load_run(str(other))
    assert not view.export_gguf.isVisible()
    bare = _run_folder(tmp_path / "b")
    (bare / "model" / "config.json").unlink()
    view.load_run(str(bare))
    assert not view.export_gguf.isVisible()
