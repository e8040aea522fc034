"""Makes the tiny random-weight models of the families beyond Llama and
Qwen2 (testdata/models) and their golden outputs from transformers, as
tools/make_goldens.py does for llama-tiny and qwen2-tiny (same tokenizer,
prompts, randomisation and golden schema; float32, eager attention, torch
on one thread, seeded: a re-run rewrites the same bytes).

    python tools/make_family_goldens.py testdata LLAMA_CPP_DIR

LLAMA_CPP_DIR is the vendor/llama.cpp folder of the llama-cpp-python==0.3.36
sdist (`pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36`,
extracted): its convert_hf_to_gguf.py, with its own gguf-py, writes the GGUF
copies, not our writer.

Models (hidden 64, ffn 128, 4 heads / 2 KV heads, 320-token tokenizer):
  qwen3-tiny       Qwen3ForCausalLM: per-head q/k RMSNorm, head_dim 32 != 64/4,
                   no biases, tied embeddings, rope_theta 1e6, 2 layers
  mistral-tiny     MistralForCausalLM: sliding_window 8 on every layer, untied,
                   2 layers
  qwen2-swa-tiny   Qwen2ForCausalLM with use_sliding_window, sliding_window 8,
                   max_window_layers 1: layer 0 full, layer 1 windowed, 2 layers
  smollm3-tiny     SmolLM3ForCausalLM: 4 layers, no_rope_layers [1,1,1,0] (the
                   default interval 4: layer 3 has no RoPE), tied
GGUF copies (F32, F16) of qwen3-tiny and smollm3-tiny, by llama.cpp's
converter. None of mistral-tiny or qwen2-swa-tiny: that converter writes no
window for its llama and qwen2 architectures, so the file would describe
another model (full attention). The converter names the pre-tokenizer by a
hash of known tokenizers; ours (trained here, GPT-2 regex) is not among
them, so this script runs the converter's main() with get_vocab_base_pre
answering "gpt-2" (what the tokenizer is); nothing else is changed.

The reference for a GGUF copy is transformers on the weights dequantised
from that file by gguf-py (Q/K permutation undone for smollm3, which
llama.cpp permutes as Llama), loaded into the model class with the
original config.json (for qwen3 the script also checks that transformers'
own GGUF loader gives the same weights, bit for bit).

The window and the NoPE layer must matter for these prompts, else the tests
prove nothing: the script measures how much the logits change without them.
"""
import json, os, subprocess, sys

import numpy as np
import torch
from transformers import (AutoConfig, AutoModelForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM, SmolLM3Config, SmolLM3ForCausalLM)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402  (tokenizer, prompts, randomize, goldens)

TOOLS = os.path.dirname(os.path.abspath(__file__))
DTYPES = ["F32", "F16"]

LAYER_NAMES = {**mg.LAYER_NAMES, "self_attn.q_norm.weight": "attn_q_norm.weight",
               "self_attn.k_norm.weight": "attn_k_norm.weight"}


def gguf_name(hf):
    if hf in mg.GGUF_NAMES:
        return mg.GGUF_NAMES[hf]
    parts = hf.split(".")
    return f"blk.{parts[2]}." + LAYER_NAMES[".".join(parts[3:])]


def convert(llama_cpp, model_dir, out, dtype):
    """llama.cpp's convert_hf_to_gguf.py main(), in a child process on its
    own gguf-py, with the pre-tokenizer named "gpt-2" (module doc)."""
    code = f"""
import sys
sys.path.insert(0, {llama_cpp!r})
sys.argv = ["convert_hf_to_gguf.py", {model_dir!r}, "--outfile", {out!r}, "--outtype", {dtype.lower()!r}]
import convert_hf_to_gguf as c
from conversion.base import TextModel
TextModel.get_vocab_base_pre = lambda self, tokenizer: "gpt-2"
c.main()
"""
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def reference_from_gguf(cls, cfg, path, permuted):
    """transformers' model class with cfg, on the file's weights as gguf-py
    dequantises them (Q/K rows unpermuted when llama.cpp permuted them)."""
    sys.path.insert(0, os.path.join(LLAMA_CPP, "gguf-py"))
    import gguf
    by = {t.name: t for t in gguf.GGUFReader(path).tensors}
    model = cls(cfg).eval()
    sd = {}
    for name, t in model.state_dict().items():
        gname = "token_embd.weight" if (name == "lm_head.weight" and cfg.tie_word_embeddings) else gguf_name(name)
        g = by[gname]
        a = gguf.quants.dequantize(g.data, g.tensor_type).astype(np.float32).reshape(t.shape)
        if permuted and name.endswith("q_proj.weight"):
            a = mg.unpermute(a, cfg.num_attention_heads, cfg.num_attention_heads)
        if permuted and name.endswith("k_proj.weight"):
            a = mg.unpermute(a, cfg.num_attention_heads, cfg.num_key_value_heads)
        sd[name] = torch.from_numpy(a.copy())
    model.load_state_dict(sd)
    return model.eval(), sd


def change(model, other_cfg, cls, sd=None):
    """The largest logit change over prompt 4 + 32 tokens (72 positions)
    when the model runs with other_cfg (and the weights sd) instead."""
    other = cls(other_cfg).eval()
    other.load_state_dict(sd if sd is not None else model.state_dict())
    g = mg.PROMPTS[3]
    ids = torch.tensor([g + [int(x) for x in np.random.default_rng(5).integers(0, mg.VOCAB, 32)]])
    with torch.no_grad():
        return (other(ids).logits - model(ids).logits).abs().max().item()


def main():
    global LLAMA_CPP
    mg.OUT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "testdata", "models")
    LLAMA_CPP = sys.argv[2]
    tok = mg.make_tokenizer()
    V = len(tok)
    common = dict(vocab_size=V, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, attn_implementation="eager")
    cfgs = {
        "qwen3-tiny": (Qwen3ForCausalLM, Qwen3Config(rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True,
                                                     head_dim=32, **common)),
        "mistral-tiny": (MistralForCausalLM, MistralConfig(rms_norm_eps=1e-5, rope_theta=1e4, tie_word_embeddings=False,
                                                           sliding_window=8, **common)),
        "qwen2-swa-tiny": (Qwen2ForCausalLM, Qwen2Config(rms_norm_eps=1e-6, rope_theta=1e4, tie_word_embeddings=True,
                                                         use_sliding_window=True, sliding_window=8,
                                                         max_window_layers=1, **common)),
        "smollm3-tiny": (SmolLM3ForCausalLM, SmolLM3Config(rms_norm_eps=1e-6, rope_theta=1e4, tie_word_embeddings=True,
                                                           pad_token_id=None, **{**common, "num_hidden_layers": 4})),
    }
    assert cfgs["qwen2-swa-tiny"][1].layer_types == ["full_attention", "sliding_attention"]
    assert cfgs["smollm3-tiny"][1].no_rope_layers == [1, 1, 1, 0]
    torch.manual_seed(0)
    models = {}
    for seed, (name, (cls, cfg)) in enumerate(cfgs.items(), start=11):
        m = mg.randomize(cls(cfg), seed)
        models[name] = m
        d = os.path.join(mg.OUT, name)
        m.save_pretrained(d)
        tok.save_pretrained(d)
        mg.goldens(m, name, "hf", "F32", "reference: transformers on this safetensors folder")
        print("wrote", name)

    # What each feature changes (0 would make its test vacuous).
    q = models["qwen3-tiny"]
    sd = {k: (torch.ones_like(v) if k.endswith(("q_norm.weight", "k_norm.weight")) else v)
          for k, v in q.state_dict().items()}
    d = change(q, cfgs["qwen3-tiny"][1], Qwen3ForCausalLM, sd)
    assert d > 1e-2, f"qwen3: the q/k norm weights change logits by only {d}"
    print(f"qwen3-tiny: the q/k norm weights (vs all ones) change logits by up to {d:.3f}")
    for name, key in [("mistral-tiny", {"sliding_window": None}),
                      ("qwen2-swa-tiny", {"use_sliding_window": False, "layer_types": None, "sliding_window": None})]:
        cls, cfg = cfgs[name]
        d = change(models[name], type(cfg)(**{**cfg.to_dict(), **key}), cls)
        assert d > 1e-2, f"{name}: the window changes logits by only {d}"
        print(f"{name}: the window changes logits by up to {d:.3f} over 72 positions")
    cls, cfg = cfgs["smollm3-tiny"]
    d = change(models["smollm3-tiny"], type(cfg)(**{**cfg.to_dict(), "no_rope_layers": [1, 1, 1, 1]}), cls)
    assert d > 1e-2, f"smollm3: the NoPE layer changes logits by only {d}"
    print(f"smollm3-tiny: the NoPE layer changes logits by up to {d:.3f} over 72 positions")

    for name, permuted in [("qwen3-tiny", False), ("smollm3-tiny", True)]:
        cls, _ = cfgs[name]
        cfg = AutoConfig.from_pretrained(os.path.join(mg.OUT, name))
        for dt in DTYPES:
            gname = f"{name}-{dt}"
            path = os.path.join(mg.OUT, gname + ".gguf")
            convert(LLAMA_CPP, os.path.join(mg.OUT, name), path, dt)
            ref, sd = reference_from_gguf(cls, cfg, path, permuted)
            notes = ("written by llama.cpp's convert_hf_to_gguf.py (llama-cpp-python 0.3.36 sdist, pre-tokenizer "
                     "named gpt-2); reference: transformers %s with the original config.json on the weights "
                     "gguf-py dequantises from this file%s" % (cls.__name__, ", Q/K permutation undone" if permuted else ""))
            if name == "qwen3-tiny":
                own = AutoModelForCausalLM.from_pretrained(mg.OUT, gguf_file=gname + ".gguf", config=cfg,
                                                           dtype=torch.float32).state_dict()
                for k, v in sd.items():
                    assert torch.equal(own[k], v), f"{path}: transformers' GGUF loader differs on {k}"
                notes += " (equal to transformers' own GGUF loader's)"
            mg.goldens(ref, gname, "gguf", dt, notes)
            print("wrote", gname)
    print("done")


if __name__ == "__main__":
    main()
