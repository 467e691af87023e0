"""text-generation trained through the engine on tiny Qwen2 and Llama decoders: the loss, packing, resume, LoRA, export, predict."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import assert_same_weights, checkpoint_weights, run_trainlab

from trainlab import RunControl
from trainlab.api.callbacks import Callback
from trainlab.engine.scripting import RunRequest, run_training
from trainlab_plugins.textgen import templates
from trainlab_plugins.textgen.model import SFTModel, plain_loss
from trainlab_plugins.textgen.task import Row, collate_rows


def _chats(n=24):
    rows = []
    for i in range(n):
        rows.append({"messages": [{"role": "user", "content": f"What is {i} plus one?"}, {"role": "assistant", "content": f"It is {i + 1}."}]})
        rows.append({"instruction": f"Repeat {i}", "output": f"{i}"})
    return rows


@pytest.fixture(scope="module")
def chats(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _chats()), encoding="utf-8")
    return path


def _params(folder, **extra):
    return {
        "model": str(folder), "template": "chatml", "max_length": "64", "epochs": "2", "batch_size": "8", "lr": "5e-3",
        "device": "cpu", "precision": "fp32", "eval_generations": "4", "max_new_tokens": "6", "seed": "3", **{k: str(v) for k, v in extra.items()},
    }


def _encoded(folder, n=5):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder))
    fmt = templates.setup_tokenizer(tok, "chatml", "test")
    lm = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    lm.resize_token_embeddings(len(tok), mean_resizing=False)
    encs = [templates.encode_chat(tok, r["messages"], fmt, 64) for r in _chats(n) if "messages" in r]
    return tok, lm, encs


@pytest.mark.parametrize("arch", ["qwen", "llama"])
def test_the_chunked_loss_equals_the_plain_loss(arch, qwen_folder, llama_folder):
    tok, lm, encs = _encoded(qwen_folder if arch == "qwen" else llama_folder)
    batch = collate_rows([Row(((tuple(e.ids), tuple(e.trained)),), i) for i, e in enumerate(encs)], tok.pad_token_id, packed=False)
    inputs = {k: batch[k] for k in ("input_ids", "labels", "attention_mask")}
    model = SFTModel(lm, loss_chunk=7)  # several chunks, the last one short
    loss_sum, tokens, _ = model(**inputs)
    reference = plain_loss(lm, **inputs)
    assert int(tokens) == int((batch["labels"][:, 1:] != -100).sum())
    assert abs(float(loss_sum / tokens) - float(reference / tokens)) < 1e-5
    # and the gradients it gives are the plain loss's
    lm.zero_grad()
    (loss_sum / tokens).backward()
    chunked = lm.get_input_embeddings().weight.grad.clone()
    lm.zero_grad()
    (plain_loss(lm, **inputs) / tokens).backward()
    assert torch.allclose(chunked, lm.get_input_embeddings().weight.grad, atol=1e-6)


def test_packed_rows_give_the_loss_of_the_examples_unpacked(qwen_folder):
    tok, lm, encs = _encoded(qwen_folder)
    model = SFTModel(lm)
    unpacked = collate_rows([Row(((tuple(e.ids), tuple(e.trained)),), i) for i, e in enumerate(encs)], tok.pad_token_id, packed=False)
    packed = collate_rows(
        [Row(tuple((tuple(e.ids), tuple(e.trained)) for e in encs[:3]), 0, True), Row(tuple((tuple(e.ids), tuple(e.trained)) for e in encs[3:]), 3, True)],
        tok.pad_token_id,
        packed=True,
    )
    assert "attention_mask" not in packed and packed["input_ids"].shape[0] == 2
    a_sum, a_tokens, _ = model(**{k: unpacked[k] for k in ("input_ids", "labels", "attention_mask")})
    b_sum, b_tokens, _ = model(**{k: packed[k] for k in ("input_ids", "labels", "position_ids")})
    assert int(a_tokens) == int(b_tokens)
    assert abs(float(a_sum / a_tokens) - float(b_sum / b_tokens)) < 1e-5
    # without the position ids the examples would attend to each other: a different loss
    c_sum, _, _ = model(input_ids=packed["input_ids"], labels=packed["labels"], attention_mask=torch.ones_like(packed["input_ids"]))
    assert abs(float(c_sum - b_sum)) > 1e-3


@pytest.fixture(scope="module")
def lora_run(qwen_folder, chats, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "lora"
    result = run_training(RunRequest(task="text-generation", data=str(chats), params=_params(qwen_folder, finetune="lora", epochs="1"), out=str(out)))
    assert result.status == "completed", result.error
    return out


def test_a_lora_run_reports_loss_and_generation_scores_and_exports_what_transformers_loads(lora_run):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    report = json.loads((lora_run / "eval.json").read_text(encoding="utf-8"))
    metrics = report["metrics"]
    assert set(metrics) >= {"perplexity", "token_accuracy", "exact_match", "rouge_l", "chrf", "stopped"}
    assert metrics["perplexity"] == pytest.approx(2.718281828 ** report["loss"], rel=1e-6)
    (detail,) = [d for d in report["details"] if d["name"] == "generations"]
    assert len(detail["rows"]) == 4 and {"prompt", "expected", "generated"} <= set(detail["rows"][0])
    assert [r["chrf"] for r in detail["rows"]] == sorted(r["chrf"] for r in detail["rows"]), "worst first"
    # the progress counts trained tokens per second beside examples per second
    events = [json.loads(line) for line in (lora_run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    progress = [e for e in events if e["event"] in ("train", "progress") and e.get("samples_per_second")]
    assert progress and all(e["unit"] == "tokens" and e["units_per_second"] > 5 * e["samples_per_second"] for e in progress)

    model_dir = lora_run / "model"
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    assert "<|im_start|>" in tok.chat_template
    merged = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    eot = tok.convert_tokens_to_ids("<|im_end|>")
    assert eot in merged.generation_config.eos_token_id
    # the merged model computes what the base model with the adapters does
    base = AutoModelForCausalLM.from_pretrained(json.loads((lora_run / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"], dtype=torch.float32)
    base.resize_token_embeddings(len(tok), mean_resizing=False)
    adapted = PeftModel.from_pretrained(base, str(lora_run / "adapter")).eval()
    ids = tok.apply_chat_template([{"role": "user", "content": "What is 3 plus one?"}], add_generation_prompt=True, return_tensors="pt", return_dict=True)["input_ids"]
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, adapted(ids).logits, atol=1e-4)


def test_eval_of_a_lora_run_reads_its_checkpoint_over_its_base_model(lora_run):
    from trainlab.engine.scripting import evaluate_run

    trained = json.loads((lora_run / "eval.json").read_text(encoding="utf-8"))
    again = evaluate_run(str(lora_run), device="cpu")
    assert again["loss"] == pytest.approx(trained["loss"], rel=1e-5)


def test_predict_answers_a_file_of_prompts_from_the_command_line(lora_run, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"prompt": "What is 3 plus one?"}) + "\n" + json.dumps({"messages": [{"role": "user", "content": "Repeat 4"}]}) + "\n", encoding="utf-8")
    out = tmp_path / "answers.jsonl"
    result = run_trainlab("predict", lora_run, prompts, "--out", out, env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(lines) == 2
    assert all("text" in json.dumps(line) for line in lines)


class StopAtStep(Callback):
    def __init__(self, control, step):
        self.control, self.step = control, step

    def on_step_end(self, state):
        if state.step == self.step:
            self.control.request_stop("test stop")


@pytest.mark.parametrize("packing", ["true", "false"])
def test_a_run_stopped_mid_epoch_resumes_bit_exact(llama_folder, chats, tmp_path, packing):
    """Packed rows, or length-grouped batches: the resumed run trains the batches the straight one did."""
    params = _params(llama_folder, finetune="full", packing=packing, max_length="96", batch_size="2", epochs="2", eval_generations="0", final_weights="last")
    straight = run_training(RunRequest(task="text-generation", data=str(chats), params=params, out=str(tmp_path / "straight")))
    assert straight.status == "completed", straight.error
    control = RunControl()
    first = run_training(
        RunRequest(task="text-generation", data=str(chats), params=params, out=str(tmp_path / "split")), callbacks=[StopAtStep(control, 3)], control=control
    )
    assert first.status == "cancelled"
    resumed = run_training(RunRequest(resume=first.run_dir))
    assert resumed.status == "completed" and resumed.steps == straight.steps
    assert_same_weights(checkpoint_weights(straight.run_dir), checkpoint_weights(resumed.run_dir))


def test_micro_batches_weigh_by_trained_tokens_so_the_step_is_the_whole_batchs(qwen_folder, chats, tmp_path):
    """A batch split into micro-batches of different token counts trains as the whole batch does."""
    params = _params(qwen_folder, finetune="full", epochs="1", eval_generations="0", final_weights="last", batch_size="8")
    whole = run_training(RunRequest(task="text-generation", data=str(chats), params=params, out=str(tmp_path / "whole")))
    split = run_training(RunRequest(task="text-generation", data=str(chats), params={**params, "micro_batch_size": "3"}, out=str(tmp_path / "split")))
    assert whole.status == split.status == "completed", (whole.error, split.error)
    a, b = checkpoint_weights(whole.run_dir), checkpoint_weights(split.run_dir)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-5), key


def test_chat_in_the_terminal_streams_answers_turn_after_turn(lora_run, tmp_path):
    result = run_trainlab(
        "chat", lora_run, "--system", "Be brief.", "--max-new-tokens", "5", input="What is 3 plus one?\nAnd 4?\n/exit\n", env={"OMP_NUM_THREADS": "1"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("assistant> ") == 2
    from trainlab import UsageError
    from trainlab.cli.chat import model_folder

    with pytest.raises(UsageError, match="no config.json"):
        model_folder(str(tmp_path))
    assert model_folder(str(lora_run)) == lora_run / "model"


def test_qlora_on_a_cpu_and_lora_on_tiny_chat_are_refused_before_training(qwen_folder, chats, tmp_path):
    from trainlab import UsageError

    with pytest.raises(UsageError, match="needs a CUDA GPU"):
        run_training(RunRequest(task="text-generation", data=str(chats), params=_params(qwen_folder, finetune="qlora"), out=str(tmp_path / "q")))
    with pytest.raises(UsageError, match="trained from scratch"):
        params = {**_params(qwen_folder, finetune="lora"), "model": "tiny-chat", "template": "auto"}
        run_training(RunRequest(task="text-generation", data=str(chats), params=params, out=str(tmp_path / "t")))


def test_a_runs_chat_compares_with_its_base_model_in_the_runs_template(lora_run, qwen_folder):
    from trainlab.engine.chat import ChatSettings, base_source, chat_source, compare_plan, load_chat_model

    tuned = chat_source(lora_run)
    assert tuned.run_dir == lora_run.resolve() and tuned.folder == (lora_run / "model").resolve()
    base = base_source(tuned)
    assert base is not None and base.folder == qwen_folder.resolve() and base.template_from == tuned.folder  # the base has no template
    plan = compare_plan(tuned, base, "cpu")
    assert plan.needs[0] > plan.needs[1] > 0  # the fine-tune has the template's new token rows
    settings = ChatSettings(system="Be brief.", max_new_tokens=4)
    messages = settings.messages([{"role": "user", "content": "What is 3 plus one?"}])
    for source in (tuned, base):
        model = load_chat_model(source, "cpu")
        assert model.prompt(messages).startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 3 plus one?")
        assert isinstance("".join(model.stream(messages, settings)), str)


def _padding(batches, lengths):
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    return 1 - sum(lengths[i] for b in batches for i in b) / padded


def test_length_grouping_cuts_padding_starts_with_the_longest_batch_and_repeats_under_the_seed(qwen_folder, tmp_path):
    import random

    from trainlab.engine.plan import plan_run

    rng = random.Random(0)
    words = [" ".join(["word"] * rng.choice([1, 2, 3, 20, 40])) for _ in range(300)]
    data = tmp_path / "varied.jsonl"
    data.write_text("".join(json.dumps({"messages": [{"role": "user", "content": "Say it"}, {"role": "assistant", "content": w}]}) + "\n" for w in words), encoding="utf-8")
    plan = plan_run(RunRequest(task="text-generation", data=str(data), params=_params(qwen_folder, finetune="full", max_length="128"), out=str(tmp_path / "r")))
    task = plan.task
    lengths = [len(r) for r in task.dataset("train")]
    grouped = task.batch_order("train", 1, 4, 3)
    assert sorted(i for b in grouped for i in b) == list(range(len(lengths)))  # every row once
    assert max(lengths[i] for i in grouped[0]) == max(lengths)  # out of memory shows at step 1
    shuffled = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(1)).tolist()
    random_batches = [shuffled[i : i + 4] for i in range(0, len(shuffled), 4)]
    assert _padding(grouped, lengths) < 0.5 * _padding(random_batches, lengths)
    assert task.batch_order("train", 1, 4, 3) == grouped  # what a resumed run recomputes
    assert task.batch_order("train", 2, 4, 3) != grouped and task.batch_order("train", 1, 4, 4) != grouped
    # the batches' order is still random: not sorted by length from first to last
    firsts = [max(lengths[i] for i in b) for b in grouped[1:]]
    assert firsts != sorted(firsts, reverse=True)
