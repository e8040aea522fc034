"""Makes the tiny random-weight models of testdata/models and their golden
outputs from HuggingFace transformers (float32, eager attention).

    python tools/make_goldens.py testdata

Models (fixed seeds):
  qwen2-tiny           Qwen2ForCausalLM: qkv bias, tied embeddings, GQA 4/2
  llama-tiny           LlamaForCausalLM: untied lm_head, GQA 4/2, head_dim 32 != 64/4,
                       rope_scaling llama3 (factor 8, original 64 positions)
  llama-tiny-sharded   the same Llama saved in 3 shards with an index
  <model>-<DTYPE>.gguf GGUF copies (F32 F16 BF16 Q8_0 Q4_0 Q4_1) written like
                       llama.cpp's convert_hf_to_gguf.py (Llama Q/K rows permuted,
                       rope_freqs for llama3 scaling, norms and biases F32)

Goldens (<name>.golden.json, schema in testdata/README.md): for 4 prompts of
token ids, the logits at every prompt position, 32 greedy tokens, top-5
log-probabilities and the top-2 margin per generated step.

The reference for a GGUF copy is the same HF model class run on the weights
dequantised from that GGUF by gguf.quants.dequantize (the dequantiser
transformers' own GGUF loader calls), with the Q/K permutation undone and the
original config (transformers' GGUF config mapping drops rope_scaling, so
loading with gguf_file= would silently change a llama3-scaled model).
"""
import json, math, os, sys

import numpy as np
import torch
import transformers, tokenizers, gguf, safetensors
from tokenizers import Tokenizer, models as tm, pre_tokenizers, decoders, trainers, processors
from transformers import (LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          PreTrainedTokenizerFast)

OUT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "testdata", "models")
VERSIONS = {"torch": torch.__version__, "transformers": transformers.__version__, "gguf": "0.19.0",
            "tokenizers": tokenizers.__version__, "safetensors": safetensors.__version__, "numpy": np.__version__}
PROMPTS = [
    [5],
    [17, 200, 33, 41, 5, 99, 250],
    [int(x) for x in np.random.default_rng(3).integers(0, 320, 16)],
    [int(x) for x in np.random.default_rng(4).integers(0, 320, 40)],
]
STEPS = 32
TEXT = """The quick brown fox jumps over the lazy dog. A small model reads tokens and writes
logits; the logits become probabilities and the probabilities become words. Go services
call the library, the library calls the kernels, and the kernels multiply matrices. 12345
67890. Hello, world! It's what we're doing: they'll see, you've seen, I'd know."""


def make_tokenizer(path):
    tok = Tokenizer(tm.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TEXT] * 4, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>")
    return fast


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g))
    return model


@torch.no_grad()
def goldens(model, name, source, dtype, notes=""):
    model.eval()
    out = {"model": name, "source": source, "dtype": dtype, "versions": VERSIONS, "notes": notes,
           "vocab_size": model.config.vocab_size, "prompts": []}
    for prompt in PROMPTS:
        ids = torch.tensor([prompt])
        logits = model(ids).logits[0].float()  # (positions, vocab)
        rec = {"tokens": prompt, "logits": [[float(v) for v in row] for row in logits.numpy()],
               "greedy": [], "top5": [], "margin": []}
        seq = list(prompt)
        for _ in range(STEPS):
            last = model(torch.tensor([seq])).logits[0, -1].float()
            lp = torch.log_softmax(last, -1)
            top = torch.topk(last, 5)
            nxt = int(torch.argmax(last))
            rec["greedy"].append(nxt)
            rec["top5"].append([{"id": int(i), "logprob": float(lp[i])} for i in top.indices])
            rec["margin"].append(float(top.values[0] - top.values[1]))
            seq.append(nxt)
        out["prompts"].append(rec)
    with open(os.path.join(OUT, name + ".golden.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))


def permute(w, n_head, n_head_kv):
    # convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


GGUF_NAMES = {
    "model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias", "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
}


def gguf_name(hf):
    if hf in GGUF_NAMES:
        return GGUF_NAMES[hf]
    parts = hf.split(".")
    return f"blk.{parts[2]}." + LAYER_NAMES[".".join(parts[3:])]


def llama3_factors(cfg):
    rs = cfg.rope_parameters if getattr(cfg, "rope_parameters", None) else cfg.rope_scaling
    base = cfg.rope_theta if hasattr(cfg, "rope_theta") and cfg.rope_theta else rs["rope_theta"]
    dim = head_dim(cfg)
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    lw, hw = old / lo, old / hi
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < hw:
            out.append(1)
        elif wl > lw:
            out.append(factor)
        else:
            s = (old / wl - lo) / (hi - lo)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def head_dim(cfg):
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def write_gguf(model, tok, arch, path, qtype):
    cfg = model.config
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(os.path.basename(path))
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    theta = cfg.rope_parameters["rope_theta"] if getattr(cfg, "rope_parameters", None) else cfg.rope_theta
    w.add_rope_freq_base(theta)
    w.add_rope_dimension_count(head_dim(cfg))
    w.add_key_length(head_dim(cfg))
    w.add_value_length(head_dim(cfg))
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(int(qtype) if qtype not in (gguf.GGMLQuantizationType.F32,) else 0)
    vocab = tok.backend_tokenizer.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    specials = set(tok.all_special_tokens)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3 if t in specials else 1 for t in tokens])
    merges = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    sd = model.state_dict()
    if arch == "llama":
        rs = cfg.rope_parameters if getattr(cfg, "rope_parameters", None) else cfg.rope_scaling
        if rs and rs.get("rope_type") == "llama3":
            w.add_tensor("rope_freqs.weight", llama3_factors(cfg))
    for name, t in sd.items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        a = t.float().numpy()
        if arch == "llama" and name.endswith("q_proj.weight"):
            a = permute(a, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            a = permute(a, cfg.num_attention_heads, cfg.num_key_value_heads)
        if a.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(gguf_name(name), a.astype(np.float32))
        else:
            q = gguf.quants.quantize(a.astype(np.float32), qtype)
            w.add_tensor(gguf_name(name), q, raw_shape=q.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def reference_from_gguf(model_cls, cfg, path, arch):
    """The HF model on the weights dequantised from a GGUF (see module doc)."""
    r = gguf.GGUFReader(path)
    by = {t.name: t for t in r.tensors}
    m = model_cls(cfg).eval()
    sd = {}
    for name, ref in m.state_dict().items():
        gname = "token_embd.weight" if (name == "lm_head.weight" and cfg.tie_word_embeddings) else gguf_name(name)
        t = by[gname]
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(ref.shape)
        if arch == "llama" and name.endswith("q_proj.weight"):
            a = unpermute(a, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            a = unpermute(a, cfg.num_attention_heads, cfg.num_key_value_heads)
        sd[name] = torch.from_numpy(a.copy())
    m.load_state_dict(sd)
    return m


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    tok = make_tokenizer(None)
    V = len(tok)
    common = dict(vocab_size=V, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, attn_implementation="eager")
    qcfg = Qwen2Config(rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True, **common)
    lcfg = LlamaConfig(rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, head_dim=32,
                       rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                       attention_bias=False, **common)
    qwen = randomize(Qwen2ForCausalLM(qcfg), 1).eval()
    llama = randomize(LlamaForCausalLM(lcfg), 2).eval()
    for name, m in [("qwen2-tiny", qwen), ("llama-tiny", llama)]:
        d = os.path.join(OUT, name)
        m.save_pretrained(d, safe_serialization=True)
        tok.save_pretrained(d)
        goldens(m, name, "hf", "F32")
    llama.save_pretrained(os.path.join(OUT, "llama-tiny-sharded"), safe_serialization=True, max_shard_size="60KB")
    tok.save_pretrained(os.path.join(OUT, "llama-tiny-sharded"))
    # Check the llama3 scaling matters for these prompts (else the test proves nothing).
    plain = LlamaForCausalLM(LlamaConfig(**{**lcfg.to_dict(), "rope_scaling": None, "rope_parameters": None}))
    plain.load_state_dict(llama.state_dict())
    with torch.no_grad():
        ids = torch.tensor([PROMPTS[3]])
        diff = (plain.eval()(ids).logits - llama(ids).logits).abs().max().item()
    assert diff > 1e-3, f"llama3 scaling changes logits by only {diff}"
    print("llama3 scaling changes logits by", diff)
    T = gguf.GGMLQuantizationType
    for arch, name, m, cls, cfg in [("qwen2", "qwen2-tiny", qwen, Qwen2ForCausalLM, qcfg),
                                     ("llama", "llama-tiny", llama, LlamaForCausalLM, lcfg)]:
        for qt in [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1]:
            gname = f"{name}-{qt.name}"
            path = os.path.join(OUT, gname + ".gguf")
            write_gguf(m, tok, arch, path, qt)
            ref = reference_from_gguf(cls, cfg, path, arch)
            goldens(ref, gname, "gguf", qt.name,
                    notes="reference: HF model on weights dequantised from this GGUF by gguf-py, Q/K permutation undone, original config")
    print("done")


if __name__ == "__main__":
    main()
