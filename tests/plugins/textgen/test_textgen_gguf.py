"""GGUF export of text-generation models: read back with gguf's own reader, on tiny Qwen2 and Llama folders and a real run."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import one_json_line, one_line_error, run_trainlab
from trainlab import UsageError
from trainlab.models.gguf import arch as archs
from trainlab.models.gguf.export import export_gguf
from trainlab.models.gguf.modelfile import render_modelfile, template_family
from trainlab.models.gguf.quant import dequantize_q8_0, quantize_q8_0
from trainlab_plugins.text import models as text_models
from trainlab_plugins.textgen import templates

gguf = pytest.importorskip("gguf", reason="the gguf extra is not installed (pip install 'trainlab[gguf]')")

CHATS = {"qwen2": "chatml", "llama": "llama3"}


def _chat_folder(base, out, template):
    """A model/ folder as a text-generation run writes it: the template's markers added, pad token, stop ids."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base))
    fmt = templates.setup_tokenizer(tokenizer, template, "test")
    lm = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    lm.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    torch.manual_seed(1)
    with torch.no_grad():  # weights far from their initial ones: decisive logits, norms that differ (a +1 or a mix-up shows)
        for name, p in lm.named_parameters():
            if p.ndim == 2:
                p.normal_(0.0, 0.2)
            else:
                p.add_(torch.linspace(-0.5, 0.5, p.numel()))
    info = {"task": "text-generation", "max_length": 64, "template": fmt.name, "stop_token_ids": list(fmt.stop_ids)}
    text_models.save_model_folder(lm, tokenizer, out, info)
    return out


@pytest.fixture(scope="module")
def chat_folders(qwen_folder, llama_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf")
    return {
        "qwen2": _chat_folder(qwen_folder, root / "qwen2" / "model", "chatml"),
        "llama": _chat_folder(llama_folder, root / "llama" / "model", "llama3"),
    }


@pytest.fixture(scope="module")
def exports(chat_folders, tmp_path_factory):
    """Each folder exported in f16 and q8_0: {(arch, quant): (result, reader)}."""
    done = {}
    for arch, folder in chat_folders.items():
        for quant in ("f16", "q8_0"):
            out = tmp_path_factory.mktemp(f"{arch}-{quant}")
            result = export_gguf(folder.parent, quant=quant, out_dir=out)
            done[arch, quant] = (result, gguf.GGUFReader(result.gguf))
    return done


def _field(reader, key):
    return reader.fields[key].contents()


def _weights(folder):
    from safetensors.torch import load_file

    return {k: v.float().numpy() for k, v in load_file(str(folder / "model.safetensors")).items()}


def _config(folder):
    return json.loads((folder / "config.json").read_text())


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_f16_tensors_are_the_models_weights_under_llama_cpps_names(arch, chat_folders, exports):
    folder = chat_folders[arch]
    config = _config(folder)
    result, reader = exports[arch, "f16"]
    weights = _weights(folder)
    names = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, arch.upper()), config["num_hidden_layers"])
    tensors = {t.name: t for t in reader.tensors}
    expected = {names.get_name(k, try_suffixes=(".weight", ".bias")): k for k in weights}  # gguf-py's own mapping
    assert set(tensors) == set(expected) and result.tensors == len(tensors)
    for name, source in expected.items():
        tensor = tensors[name]
        data = np.asarray(tensor.data)
        if data.ndim == 1:
            assert tensor.tensor_type == gguf.GGMLQuantizationType.F32, name
            np.testing.assert_array_equal(data, weights[source], err_msg=name)
            continue
        assert tensor.tensor_type == gguf.GGMLQuantizationType.F16, name
        if arch == "llama" and ".attn_q." in name:
            data = archs.unpermute_rotary(data, config["num_attention_heads"])
        elif arch == "llama" and ".attn_k." in name:
            data = archs.unpermute_rotary(data, config["num_key_value_heads"])
        np.testing.assert_array_equal(data, weights[source].astype(np.float16), err_msg=name)


def test_llama_stores_queries_and_keys_in_llama_cpps_rotary_order(chat_folders, exports):
    config = _config(chat_folders["llama"])
    stored = {t.name: np.asarray(t.data).astype(np.float32) for t in exports["llama", "f16"][1].tensors}
    q = _weights(chat_folders["llama"])["model.layers.0.self_attn.q_proj.weight"].astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(stored["blk.0.attn_q.weight"], archs.permute_rotary(q, config["num_attention_heads"]))
    assert not np.array_equal(stored["blk.0.attn_q.weight"], q)
    # rows of one head: the first half's i-th row goes to 2i, the second half's to 2i + 1
    head = np.arange(8, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(archs.permute_rotary(head, 1)[:, 0], [0, 4, 1, 5, 2, 6, 3, 7])


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_q8_0_tensors_are_within_half_a_scale_of_the_weights(arch, chat_folders, exports):
    config = _config(chat_folders[arch])
    result, reader = exports[arch, "q8_0"]
    weights = _weights(chat_folders[arch])
    mapping = archs.ARCHITECTURES[arch]
    planned = archs.plan_tensors({k: v.shape for k, v in weights.items()}, mapping, archs.hyperparameters(config, mapping, "t"), "t")
    by_name = {t.name: t.source for t in planned}
    quantized = [t for t in reader.tensors if t.tensor_type == gguf.GGMLQuantizationType.Q8_0]
    assert len(quantized) == result.quantized == sum(1 for w in weights.values() if w.ndim == 2)
    for tensor in quantized:
        source = weights[by_name[tensor.name]]
        if arch == "llama" and ".attn_q." in tensor.name:
            source = archs.permute_rotary(source, config["num_attention_heads"])
        elif arch == "llama" and ".attn_k." in tensor.name:
            source = archs.permute_rotary(source, config["num_key_value_heads"])
        back, scales = dequantize_q8_0(np.asarray(tensor.data))
        np.testing.assert_array_equal(back, gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type))  # gguf-py reads it alike
        error = np.abs(back - source).reshape(*scales.shape, 32).max(axis=-1)
        assert (error <= scales / 2 * (1 + 1e-6)).all(), tensor.name
        assert (scales > 0).all()
    assert result.bytes < exports[arch, "f16"][0].bytes * 0.7


def test_q8_0_blocks_hold_a_half_scale_and_32_signed_bytes():
    weights = np.array([np.linspace(-1.0, 1.0, 32), np.zeros(32)], dtype=np.float32)
    data = quantize_q8_0(weights)
    assert data.shape == (2, 34) and data.dtype == np.uint8
    scale = data[0, :2].view("<f2")[0]
    assert scale >= np.float16(1.0 / 127) and data[0, 2:].view(np.int8)[[0, -1]].tolist() == [-127, 127]
    back, scales = dequantize_q8_0(data)
    assert (np.abs(back - weights) <= scales.repeat(32, axis=-1) / 2).all() and not back[1].any()


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_metadata_and_vocabulary_are_complete(arch, chat_folders, exports):
    from transformers import AutoTokenizer

    folder = chat_folders[arch]
    config = _config(folder)
    _, reader = exports[arch, "f16"]
    assert _field(reader, "general.architecture") == arch
    assert _field(reader, f"{arch}.context_length") == config["max_position_embeddings"]
    assert _field(reader, f"{arch}.embedding_length") == config["hidden_size"]
    assert _field(reader, f"{arch}.block_count") == config["num_hidden_layers"]
    assert _field(reader, f"{arch}.feed_forward_length") == config["intermediate_size"]
    assert _field(reader, f"{arch}.attention.head_count") == config["num_attention_heads"]
    assert _field(reader, f"{arch}.attention.head_count_kv") == config["num_key_value_heads"]
    assert _field(reader, f"{arch}.rope.dimension_count") == config["hidden_size"] // config["num_attention_heads"]
    assert _field(reader, f"{arch}.rope.freq_base") == pytest.approx(archs.rope_settings(config)[0])
    assert _field(reader, f"{arch}.attention.layer_norm_rms_epsilon") == pytest.approx(config["rms_norm_eps"])
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert len(tokens) == config["vocab_size"] == len(tokenizer)
    assert tokens == [tokenizer.convert_ids_to_tokens(i) for i in range(len(tokenizer))]
    # transformers reads a qwen2 folder's tokenizer with Qwen's split pattern; the llama one keeps GPT-2's
    assert _field(reader, "tokenizer.ggml.model") == "gpt2" and _field(reader, "tokenizer.ggml.pre") == {"qwen2": "qwen2", "llama": "gpt-2"}[arch]
    merges = json.loads((folder / "tokenizer.json").read_text())["model"]["merges"]
    assert _field(reader, "tokenizer.ggml.merges") == [m if isinstance(m, str) else " ".join(m) for m in merges]
    types = _field(reader, "tokenizer.ggml.token_type")
    marker = "<|im_end|>" if arch == "qwen2" else "<|eot_id|>"
    assert types[tokenizer.convert_tokens_to_ids(marker)] == gguf.TokenType.CONTROL and types[5] == gguf.TokenType.NORMAL
    assert _field(reader, "tokenizer.ggml.eos_token_id") == tokenizer.eos_token_id
    assert _field(reader, "tokenizer.ggml.padding_token_id") == tokenizer.pad_token_id != tokenizer.eos_token_id
    assert _field(reader, "tokenizer.ggml.eot_token_id") == tokenizer.convert_tokens_to_ids(marker)
    assert _field(reader, "tokenizer.ggml.add_bos_token") is False
    assert _field(reader, "tokenizer.chat_template") == tokenizer.chat_template == templates.NAMED_TEMPLATES[CHATS[arch]].source


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_the_modelfile_has_the_template_and_stops_at_the_end_of_turn(arch, exports):
    result, _ = exports[arch, "f16"]
    text = Path(result.modelfile).read_text(encoding="utf-8")
    assert text.splitlines()[1] == "FROM ./model.gguf"
    marker = "<|im_end|>" if arch == "qwen2" else "<|eot_id|>"
    stops = [line.split(" ", 2)[2] for line in text.splitlines() if line.startswith("PARAMETER stop ")]
    assert f'"{marker}"' in stops and '"<|endoftext|>"' in stops
    template = text.split('TEMPLATE """', 1)[1].split('"""', 1)[0]
    if arch == "qwen2":
        assert result.template_family == "chatml" and "<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>" in template
    else:
        assert result.template_family == "llama3" and "<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n{{ .Content }}<|eot_id|>" in template


# model_type, template, llama.cpp architecture, config beyond the common one
MORE = {
    "qwen3": ("qwen3", "chatml", "qwen3", {"head_dim": 32}),
    "phi3": ("phi3", "phi", "phi3", {}),
    "gemma": ("gemma", "gemma", "gemma", {"head_dim": 32}),
    "mistral": ("mistral", "mistral", "llama", {}),
    "llama-spm": ("llama", "llama3", "llama", {}),
}


def _sentencepiece_tokenizer():
    """A SentencePiece-style BPE (byte fallback, ▁ for spaces, BOS added), as transformers saves Llama 2's and Mistral's."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    texts = [f"What is {i} plus one? It is {i + 1}. 你好, hello world" for i in range(200)]
    bpe = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    bpe.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    bpe.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    specials = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=specials))
    bpe.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


@pytest.fixture(scope="module")
def more_exports(llama_folder, tmp_path_factory):
    """Qwen3, Phi-3, Gemma, Mistral (byte-level BPE) and Llama with a SentencePiece-style vocabulary, exported in f16."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    done = {}
    for name, (model_type, template, _, extra) in MORE.items():
        tokenizer = _sentencepiece_tokenizer() if name == "llama-spm" else AutoTokenizer.from_pretrained(str(llama_folder))
        fmt = templates.setup_tokenizer(tokenizer, template, "test")
        config = AutoConfig.for_model(
            model_type, vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **extra,
        )
        torch.manual_seed(2)
        lm = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        with torch.no_grad():
            for p in lm.parameters():
                p.normal_(0.0, 0.2 if p.ndim == 2 else 0.05)
        folder = tmp_path_factory.mktemp(name) / "model"
        text_models.save_model_folder(lm, tokenizer, folder, {"max_length": 64, "stop_token_ids": list(fmt.stop_ids)})
        done[name] = (folder, export_gguf(folder.parent, out_dir=folder.parent / "gguf"))
    return done


@pytest.mark.parametrize("name", list(MORE))
def test_each_architecture_is_written_under_gguf_pys_names_and_layout(name, more_exports):
    folder, result = more_exports[name]
    _, _, arch, extra = MORE[name]
    reader = gguf.GGUFReader(result.gguf)
    config = _config(folder)
    weights = _weights(folder)
    assert _field(reader, "general.architecture") == result.architecture == arch
    gguf_arch = next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == arch)
    names = gguf.get_tensor_name_map(gguf_arch, config["num_hidden_layers"])
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    expected = {names.get_name(k, try_suffixes=(".weight", ".bias")): k for k in weights}
    assert set(tensors) == set(expected)
    allowed = {gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[gguf_arch]}
    assert all(name.rsplit(".", 1)[0].replace(".0.", ".{bid}.").replace(".1.", ".{bid}.") in allowed for name in tensors)
    for target, source in expected.items():
        want = weights[source] + (1.0 if arch == "gemma" and target.endswith("norm.weight") else 0.0)  # Gemma's norms: 1 + weight
        if arch == "llama" and ".attn_q." in target:
            want = archs.permute_rotary(want, config["num_attention_heads"])
        elif arch == "llama" and ".attn_k." in target:
            want = archs.permute_rotary(want, config["num_key_value_heads"])
        np.testing.assert_array_equal(tensors[target], want.astype(tensors[target].dtype), err_msg=target)
    if "head_dim" in extra:  # a head size apart from hidden / heads
        assert _field(reader, f"{arch}.attention.key_length") == _field(reader, f"{arch}.attention.value_length") == extra["head_dim"]
    family = {"chatml": "chatml", "phi": "phi3", "gemma": "gemma", "mistral": "mistral", "llama3": "llama3"}[MORE[name][1]]
    assert result.template_family == family


def test_a_sentencepiece_vocabulary_is_written_as_llama_cpps_llama_model(more_exports):
    from transformers import AutoTokenizer

    folder, result = more_exports["llama-spm"]
    reader = gguf.GGUFReader(result.gguf)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokens = _field(reader, "tokenizer.ggml.tokens")
    types = _field(reader, "tokenizer.ggml.token_type")
    scores = _field(reader, "tokenizer.ggml.scores")
    assert _field(reader, "tokenizer.ggml.model") == result.tokenizer == "llama" and "tokenizer.ggml.merges" not in reader.fields
    assert tokens == [tokenizer.convert_ids_to_tokens(i) for i in range(len(tokenizer))] and len(scores) == len(tokens)
    assert types[tokenizer.convert_tokens_to_ids("<0x0A>")] == gguf.TokenType.BYTE and types[tokenizer.unk_token_id] == gguf.TokenType.UNKNOWN
    normal = [i for i, t in enumerate(types) if t == gguf.TokenType.NORMAL]
    assert all(scores[a] > scores[b] for a, b in itertools.pairwise(normal))  # earlier pieces merge first
    assert _field(reader, "tokenizer.ggml.add_space_prefix") is True
    assert _field(reader, "tokenizer.ggml.add_bos_token") is True and _field(reader, "tokenizer.ggml.bos_token_id") == tokenizer.bos_token_id


def test_a_run_that_kept_its_adapters_only_is_exported_merged(chat_folders, tmp_path):
    """QLoRA keeps adapters only: the export merges them into the base model the run names."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = chat_folders["qwen2"]
    lm = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # peft on transformers' deprecated names
        peft_lm = get_peft_model(lm, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    run = tmp_path / "run"
    peft_lm.save_pretrained(str(run / "adapter"))
    merged = peft_lm.merge_and_unload().state_dict()
    (run / "model").mkdir()
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(run / "model"))
    (run / "model" / "config.json").write_text((base / "config.json").read_text())
    info = {**json.loads((base / "trainlab.json").read_text()), "adapters_only": True, "base_model": str(base)}
    (run / "model" / "trainlab.json").write_text(json.dumps(info))
    result = export_gguf(run)
    tensors = {t.name: np.asarray(t.data) for t in gguf.GGUFReader(result.gguf).tensors}
    q = merged["model.layers.0.self_attn.q_proj.weight"].numpy()
    assert not np.allclose(q, _weights(base)["model.layers.0.self_attn.q_proj.weight"])  # the adapters changed it
    np.testing.assert_array_equal(tensors["blk.0.attn_q.weight"], q.astype(np.float16))
    assert result.tensors == len(tensors) == len(_weights(base))


def test_a_model_folder_trainlab_did_not_train_stops_at_its_templates_end_of_turn_too(chat_folders, tmp_path):
    import shutil as files

    folder = tmp_path / "model"
    files.copytree(chat_folders["qwen2"], folder)
    (folder / "trainlab.json").unlink()  # no run's stop tokens: the EOS, and the template's end-of-turn marker
    result = export_gguf(folder)
    assert result.stop_tokens == ["<|endoftext|>", "<|im_end|>"]
    assert 'PARAMETER stop "<|im_end|>"' in Path(result.modelfile).read_text(encoding="utf-8")


def test_weights_past_float16s_range_are_refused_in_f16_and_fit_in_q8_0(chat_folders, tmp_path):
    import shutil as files

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "model"
    files.copytree(chat_folders["qwen2"], folder)
    weights = load_file(str(folder / "model.safetensors"))
    weights["model.layers.1.mlp.up_proj.weight"][0, 0] = 1e5  # as a bf16 model may hold
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(UsageError, match=r"model.layers.1.mlp.up_proj.weight: weights beyond float16's range.*--quant q8_0"):
        export_gguf(folder, out_dir=tmp_path / "f16")
    assert not list((tmp_path / "f16").glob("*"))  # nothing half-written left
    result = export_gguf(folder, quant="q8_0", out_dir=tmp_path / "q8_0")
    tensor = next(t for t in gguf.GGUFReader(result.gguf).tensors if t.name == "blk.1.ffn_up.weight")
    assert dequantize_q8_0(np.asarray(tensor.data))[0][0, 0] == pytest.approx(1e5, rel=1e-3)


CONVERSATIONS = (
    [{"role": "user", "content": "Hi there"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."},
     {"role": "user", "content": "And 3+3?"}],
    [{"role": "user", "content": "One"}, {"role": "assistant", "content": "Two"}, {"role": "user", "content": "Three"}],
)


def test_the_modelfile_templates_render_conversations_as_the_chat_templates_do(tmp_path):
    """Each translated TEMPLATE, run by Go's text/template as Ollama runs it, writes the prompt the Jinja template writes."""
    if shutil.which("go") is None:
        pytest.skip("Go is not installed here (Ollama's template language is Go's text/template)")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    jinja = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)  # as transformers renders chat templates
    cases, expected = [], []
    for name, source in {"chatml": templates.CHATML, "llama3": templates.LLAMA3, "gemma": templates.GEMMA,
                         "phi3": templates.PHI, "mistral": templates.MISTRAL}.items():
        family = template_family(source)
        assert family is not None and family.name == name
        for chat in CONVERSATIONS:
            # BOS is the tokenizer's to add in llama.cpp (tokenizer.ggml.add_bos_token), not the template's
            expected.append(jinja.from_string(source).render(messages=chat, add_generation_prompt=True, bos_token="", eos_token="</s>"))
            cases.append({"Template": family.ollama.replace("EOS_TOKEN", "</s>"), "Messages": [{"Role": m["role"], "Content": m["content"]} for m in chat]})
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    script = Path(__file__).with_name("ollama_template_check.go")
    done = subprocess.run(["go", "run", str(script), str(tmp_path / "cases.json")], check=False, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GOCACHE": str(tmp_path / "gocache"), "GO111MODULE": "off"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected


def test_a_modelfile_carries_the_system_prompt_and_leaves_unknown_templates_to_ollama():
    text, family = render_modelfile("model.gguf", templates.QWEN, ["<|im_end|>"])
    assert family == "chatml" and 'SYSTEM """You are a helpful assistant."""' in text  # Qwen's default system turn
    text, family = render_modelfile("model.gguf", "{{ messages }}", ["</s>"], system="Answer in French.")
    assert family == "" and "TEMPLATE" not in text.replace("# TEMPLATE", "") and 'SYSTEM """Answer in French."""' in text


def test_an_architecture_or_a_run_it_cannot_write_is_named(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    with pytest.raises(UsageError, match="model_type 'gpt2'.*Qwen2"):
        export_gguf(tmp_path)
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"task": "text-classification"}))
    (run / "model" / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(UsageError, match="a text-classification run; GGUF export writes text-generation models"):
        export_gguf(run)


def test_without_the_gguf_extra_export_is_one_line_naming_it(chat_folders, tmp_path):
    blocked = tmp_path / "blocked" / "gguf"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('gguf is blocked in this test')\n")
    result = run_trainlab("export", chat_folders["qwen2"], "--format", "gguf", "--json", extra_path=[blocked.parent])
    assert "trainlab[gguf]" in one_line_error(result)
    assert not (chat_folders["qwen2"] / "model.gguf").exists()


def test_the_command_exports_a_run_directory_in_q8_0_beside_its_model(chat_folders):
    run_dir = chat_folders["qwen2"].parent  # a run directory: model/ as text-generation writes it
    result = run_trainlab("export", run_dir, "--format", "gguf", "--quant", "q8_0", "--system", "Be brief.", "--json")
    assert result.returncode == 0, result.stderr
    answer = one_json_line(result)
    assert answer["gguf"] == str((run_dir / "model.gguf").resolve()) and answer["modelfile"] == str((run_dir / "Modelfile").resolve())
    assert answer["architecture"] == "qwen2" and answer["quant"] == "q8_0" and answer["quantized"] > 0
    reader = gguf.GGUFReader(run_dir / "model.gguf")
    assert _field(reader, "general.file_type") == gguf.LlamaFileType.MOSTLY_Q8_0
    modelfile = (run_dir / "Modelfile").read_text(encoding="utf-8")
    assert 'PARAMETER stop "<|im_end|>"' in modelfile and 'SYSTEM """Be brief."""' in modelfile
    assert not list(run_dir.glob(".model.gguf*"))  # no temporary left behind
    bad = run_trainlab("export", run_dir, "--format", "gguf", "--quant", "q4_0", "--json")
    assert "--quant" in one_line_error(bad)


NEW_TOKENS = 16
TEXTS = ("What is 3 plus one? It's 4, isn't it?  Yes.\n\nNew line 12345 你好吗", "hello   world\tand tabs")


def _llama_cpp():
    """How to run llama.cpp here: llama-cpp-python, or node-llama-cpp's prebuilt binary (TRAINLAB_NODE_LLAMA_CPP=DIR)."""
    try:
        import llama_cpp

        return "python", llama_cpp
    except ImportError:
        pass
    node_dir = os.environ.get("TRAINLAB_NODE_LLAMA_CPP", "")
    if node_dir and shutil.which("node") and (Path(node_dir) / "node_modules" / "node-llama-cpp").is_dir():
        return "node", node_dir
    pytest.skip(
        "llama.cpp is not installed here: llama-cpp-python (no prebuilt wheel for this machine), "
        "or node-llama-cpp's prebuilt binary named by TRAINLAB_NODE_LLAMA_CPP=DIR (npm install --ignore-scripts node-llama-cpp in DIR)"
    )


def _transformers_side(folder, gguf_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    lm = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 3 plus one?"}]
    prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        greedy = lm.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False, eos_token_id=None, pad_token_id=tokenizer.pad_token_id)
    answer = greedy[0, len(ids):].tolist()
    stops = set(json.loads((Path(folder) / "trainlab.json").read_text())["stop_token_ids"])
    answer = answer[: next((i for i, t in enumerate(answer) if t in stops), len(answer))]  # llama.cpp ends at a stop token
    return {
        "gguf": gguf_path, "prompt": prompt, "prompt_ids": ids, "new_tokens": len(answer), "texts": list(TEXTS),
        "greedy": answer, "stops": sorted(stops), "text_ids": [tokenizer(t, add_special_tokens=False)["input_ids"] for t in TEXTS],
    }


def _llama_cpp_side(kind, runner, cases, tmp_path):
    if kind == "node":
        (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        script = Path(__file__).with_name("llama_cpp_check.mjs")
        done = subprocess.run(["node", str(script), runner, str(tmp_path / "cases.json")], check=False, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    answers = []
    for case in cases:
        model = runner.Llama(model_path=case["gguf"], n_ctx=256, n_threads=1, verbose=False)
        greedy = []
        for token in model.generate(case["prompt_ids"], top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0):
            if token in case["stops"] or len(greedy) >= case["new_tokens"]:
                break
            greedy.append(token)
        answers.append({
            "texts": [model.tokenize(t.encode("utf-8"), add_bos=False, special=False) for t in case["texts"]],
            "prompt": model.tokenize(case["prompt"].encode("utf-8"), add_bos=False, special=True),
            "greedy": greedy,
        })
    return answers


def test_llama_cpp_tokenizes_and_answers_greedily_as_transformers(chat_folders, exports, more_exports, tmp_path):
    """The f16 files in llama.cpp itself: the same tokens for texts and the chat prompt, the same greedy answer."""
    kind, runner = _llama_cpp()
    folders = {**{arch: (chat_folders[arch], exports[arch, "f16"][0]) for arch in chat_folders}, **more_exports}
    cases = [_transformers_side(folder, result.gguf) for folder, result in folders.values()]
    for arch, case, got in zip(folders, cases, _llama_cpp_side(kind, runner, cases, tmp_path)):
        assert got["texts"] == case["text_ids"], arch
        assert got["prompt"] == case["prompt_ids"], arch
        assert got["greedy"] == case["greedy"] and len(case["greedy"]) >= 8, arch
