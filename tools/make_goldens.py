"""Makes the tiny random-weight models of testdata/models and their golden
outputs from HuggingFace transformers (float32, eager attention).

    python tools/make_goldens.py testdata          (make goldens; tools/requirements.txt)

Everything is seeded and torch runs on one thread: a re-run with the pinned
versions on the same machine rewrites the same bytes (the tokenizer trainer
is deterministic too).

Models:
  qwen2-tiny           Qwen2ForCausalLM: q/k/v biases, tied embeddings, GQA 4/2,
                       hidden 64, 2 layers, ffn 128, rope_theta 1e6, eps 1e-6
  llama-tiny           LlamaForCausalLM: untied lm_head, GQA 4/2, head_dim 32 != 64/4,
                       rope_scaling llama3 (factor 8, original 64 positions), no bias
  llama-tiny-sharded   the same Llama saved in shards with model.safetensors.index.json
  <model>-<DTYPE>.gguf GGUF copies (F32 F16 BF16 Q8_0 Q4_0 Q4_1) written like
                       llama.cpp's convert_hf_to_gguf.py: Llama Q/K rows permuted
                       (LlamaModel.permute), a rope_freqs tensor for llama3 scaling,
                       1-D tensors (norms, biases, rope_freqs) F32. gguf 0.19.0 has no
                       K-quant quantiser (Q2_K..Q6_K only dequantise), so no K-quants.
All share one byte-level BPE tokenizer (320 tokens: 3 specials, the 256 byte
symbols, 61 merges learned from TEXT) trained here with `tokenizers`.

Goldens (<name>.golden.json, schema in testdata/README.md): for 4 prompts of
token ids (lengths 1, 7, 16, 40), the logits at every prompt position, 32
greedy tokens (manual argmax loop over full logits, no EOS stop), the top-5
log-probabilities and the top-1 minus top-2 logit margin of every step.
Floats are float32 values written in their shortest round-trip form.

The reference for a GGUF copy is transformers' own GGUF loader
(from_pretrained(dir, gguf_file=...), which dequantises with gguf-py and
undoes the Q/K permutation) given the original config: its GGUF config
mapping drops rope_scaling, so without it the llama3-scaled model would
silently change (the script measures this and writes it into "notes"). The
script also checks that these weights equal an independent dequantisation
of the file (gguf.quants.dequantize + inverse permutation), bit for bit, and
that transformers' tokenizer read from the GGUF tokenizes like tokenizer.json.
tools/check_tiny_gguf_llamacpp.py checks the GGUF copies against llama.cpp.
"""
import importlib.metadata as md
import json, math, os, platform, sys, warnings

import numpy as np
import torch
import gguf
from tokenizers import Tokenizer, models as tm, pre_tokenizers, decoders, trainers, processors
from transformers import (AutoConfig, AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM,
                          PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM)
from transformers.utils import logging as hf_logging

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()
warnings.filterwarnings("ignore")
torch.set_num_threads(1)  # results independent of the machine's core count

OUT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "testdata", "models")
VERSIONS = {"python": platform.python_version(),
            **{p: md.version(p) for p in ["torch", "transformers", "gguf", "tokenizers", "safetensors", "numpy"]}}
VOCAB = 320
PROMPTS = [
    [5],
    [17, 200, 33, 41, 5, 99, 250],
    [int(x) for x in np.random.default_rng(3).integers(0, VOCAB, 16)],
    [int(x) for x in np.random.default_rng(4).integers(0, VOCAB, 40)],  # 40 + 32 steps = 72 >= 64 positions
]
STEPS = 32
DTYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1"]
TEXT = """The quick brown fox jumps over the lazy dog. A small model reads tokens and writes
logits; the logits become probabilities and the probabilities become words. Go services
call the library, the library calls the kernels, and the kernels multiply matrices. 12345
67890. Hello, world! It's what we're doing: they'll see, you've seen, I'd know."""
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def make_tokenizer():
    """Byte-level BPE (GPT-2 regex, no prefix space): ids 0-2 specials, then
    the 256 byte symbols, then the learned merges; 320 tokens in all."""
    tok = Tokenizer(tm.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TEXT] * 4, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>")


def randomize(model, seed):
    """Every parameter random, norm weights around 1 and biases around 0 (so
    that a dropped bias or a norm weight taken as 1 shows in the logits)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=g))
    return model.eval()


def f32(t):
    """A float32 tensor as Python floats that print as the shortest decimal
    which reads back as the same float32."""
    a = np.asarray(t, dtype=np.float32)
    return [float(s) for s in a.reshape(-1).astype(str)] if a.ndim == 1 else [f32(r) for r in a]


@torch.no_grad()
def goldens(model, name, source, dtype, notes):
    model.eval()
    out = {"model": name, "source": source, "dtype": dtype, "versions": VERSIONS, "notes": notes,
           "vocab_size": model.config.vocab_size, "prompts": []}
    for prompt in PROMPTS:
        logits = model(torch.tensor([prompt])).logits[0].float()  # (positions, vocab)
        rec = {"tokens": prompt, "logits": f32(logits), "greedy": [], "top5": [], "margin": []}
        seq = list(prompt)
        for _ in range(STEPS):
            last = model(torch.tensor([seq])).logits[0, -1].float()  # full recompute, no cache
            lp = torch.log_softmax(last, -1)
            top = torch.topk(last, 5)
            nxt = int(torch.argmax(last))
            assert nxt == int(top.indices[0])
            rec["greedy"].append(nxt)
            rec["top5"].append([{"id": int(i), "logprob": f32(lp[i:i + 1])[0]} for i in top.indices])
            rec["margin"].append(f32((top.values[0] - top.values[1]).reshape(1))[0])
            seq.append(nxt)
        out["prompts"].append(rec)
    with open(os.path.join(OUT, name + ".golden.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


def permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py LlamaModel.permute: per head, rows (half, i) ->
    (i, half), i.e. HF's rotate-half layout becomes llama.cpp's interleaved one."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


GGUF_NAMES = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
              "lm_head.weight": "output.weight"}
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
    parts = hf.split(".")  # model.layers.N.<rest>
    return f"blk.{parts[2]}." + LAYER_NAMES[".".join(parts[3:])]


def rope(cfg):
    return cfg.rope_parameters  # transformers 5: rope_theta and rope_scaling live here


def head_dim(cfg):
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def llama3_factors(cfg):
    """convert_hf_to_gguf.py LlamaModel.generate_extra_tensors: one factor per
    rotary pair; llama.cpp divides that pair's frequency by it."""
    rs = rope(cfg)
    base, dim = rs["rope_theta"], head_dim(cfg)
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


FILE_TYPE = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
             "BF16": gguf.LlamaFileType.MOSTLY_BF16, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
             "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "Q4_1": gguf.LlamaFileType.MOSTLY_Q4_1}


def write_gguf(model, tok, arch, path, dtype):
    cfg, qtype = model.config, gguf.GGMLQuantizationType[dtype]
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(os.path.basename(path)[:-len(".gguf")])
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(rope(cfg)["rope_theta"])
    w.add_rope_dimension_count(head_dim(cfg))
    if getattr(cfg, "head_dim", None):  # convert_hf_to_gguf writes these when config.json has head_dim
        w.add_key_length(head_dim(cfg))
        w.add_value_length(head_dim(cfg))
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(FILE_TYPE[dtype])
    # Tokenizer as convert_hf_to_gguf.py _set_vocab_gpt2: tokens by id,
    # specials CONTROL, merges "a b"; the GPT-2 regex is llama.cpp pre "gpt-2".
    vocab = tok.backend_tokenizer.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    assert len(tokens) == cfg.vocab_size and [vocab[t] for t in tokens] == list(range(len(tokens)))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.NORMAL for t in tokens])
    merges = json.loads(tok.backend_tokenizer.to_str())["model"]["merges"]
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m for m in merges])
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    if arch == "llama" and rope(cfg).get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_factors(cfg))
    for name, t in model.state_dict().items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        a = t.float().numpy()
        if arch == "llama" and name.endswith("q_proj.weight"):
            a = permute(a, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            a = permute(a, cfg.num_attention_heads, cfg.num_key_value_heads)
        if a.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(gguf_name(name), a.astype(np.float32))
        elif qtype == gguf.GGMLQuantizationType.F16:
            w.add_tensor(gguf_name(name), a.astype(np.float16))
        else:
            q = gguf.quants.quantize(a.astype(np.float32), qtype)
            w.add_tensor(gguf_name(name), q, raw_shape=q.shape, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def independent_dequant(cfg, path, arch, shapes):
    """The state dict dequantised from a GGUF by gguf-py directly, Q/K unpermuted."""
    by = {t.name: t for t in gguf.GGUFReader(path).tensors}
    sd = {}
    for name, shape in shapes.items():
        gname = "token_embd.weight" if (name == "lm_head.weight" and cfg.tie_word_embeddings) else gguf_name(name)
        t = by[gname]
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        if arch == "llama" and name.endswith("q_proj.weight"):
            a = unpermute(a, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and name.endswith("k_proj.weight"):
            a = unpermute(a, cfg.num_attention_heads, cfg.num_key_value_heads)
        sd[name] = torch.from_numpy(a.copy())
    return sd


def reference_from_gguf(cfg, path, arch):
    """transformers' GGUF loader with the original config (module doc); the
    returned notes say what its own config mapping would have lost."""
    d, f = os.path.dirname(path), os.path.basename(path)
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, config=cfg, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    ind = independent_dequant(cfg, path, arch, {n: t.shape for n, t in m.state_dict().items()})
    for name, t in m.state_dict().items():
        assert torch.equal(t, ind[name]), f"{path}: transformers' {name} differs from gguf-py dequantisation"
    own = AutoConfig.from_pretrained(d, gguf_file=f)
    lost = []
    for k in ["rope_parameters", "rms_norm_eps", "head_dim", "tie_word_embeddings", "vocab_size",
              "num_key_value_heads", "max_position_embeddings"]:
        a, b = getattr(cfg, k, None), getattr(own, k, None)
        if a != b:
            lost.append(f"{k} {b!r} instead of {a!r}")
    notes = ("reference: transformers from_pretrained(gguf_file=...) (gguf-py dequantisation to float32, "
             "Q/K permutation undone; weights checked equal to an independent gguf-py dequantisation) "
             "with the original config.json passed explicitly")
    if lost:
        notes += "; transformers' GGUF config mapping alone would give " + ", ".join(lost)
    return m, notes, AutoTokenizer.from_pretrained(d, gguf_file=f)


def main():
    os.makedirs(OUT, exist_ok=True)
    tok = make_tokenizer()
    V = len(tok)
    assert V == VOCAB and all(0 <= i < V for p in PROMPTS for i in p)
    common = dict(vocab_size=V, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, attn_implementation="eager")
    qcfg = Qwen2Config(rms_norm_eps=1e-6, rope_theta=1e6, tie_word_embeddings=True, **common)
    lcfg = LlamaConfig(rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, head_dim=32,
                       rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                     "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                       attention_bias=False, **common)
    assert rope(lcfg)["rope_type"] == "llama3" and rope(qcfg)["rope_theta"] == 1e6
    torch.manual_seed(0)
    qwen = randomize(Qwen2ForCausalLM(qcfg), 1)
    llama = randomize(LlamaForCausalLM(lcfg), 2)
    assert bool((qwen.model.layers[0].self_attn.q_proj.bias != 0).all())
    assert llama.model.layers[0].self_attn.q_proj.bias is None

    for name, m in [("qwen2-tiny", qwen), ("llama-tiny", llama)]:
        d = os.path.join(OUT, name)
        m.save_pretrained(d)
        tok.save_pretrained(d)
        goldens(m, name, "hf", "F32", "reference: transformers on this safetensors folder")
    d = os.path.join(OUT, "llama-tiny-sharded")
    llama.save_pretrained(d, max_shard_size="60KB")
    tok.save_pretrained(d)
    assert os.path.exists(os.path.join(d, "model.safetensors.index.json"))

    # The llama3 scaling must matter for these prompts, else the tests prove nothing.
    plain = LlamaForCausalLM(LlamaConfig(**{**lcfg.to_dict(), "rope_scaling": None, "rope_parameters": None}))
    plain.load_state_dict(llama.state_dict())
    assert rope(plain.config)["rope_type"] == "default"
    with torch.no_grad():
        g = json.load(open(os.path.join(OUT, "llama-tiny.golden.json")))["prompts"][3]
        ids = torch.tensor([g["tokens"] + g["greedy"]])  # 72 positions
        diff = (plain.eval()(ids).logits - llama(ids).logits).abs().max().item()
    assert diff > 1e-2, f"llama3 scaling changes logits by only {diff}"
    print(f"llama3 scaling changes llama-tiny logits by up to {diff:.3f} over {ids.shape[1]} positions")

    for arch, name, m in [("qwen2", "qwen2-tiny", qwen), ("llama", "llama-tiny", llama)]:
        for dt in DTYPES:
            gname = f"{name}-{dt}"
            path = os.path.join(OUT, gname + ".gguf")
            write_gguf(m, tok, arch, path, dt)
            ref, notes, gtok = reference_from_gguf(AutoConfig.from_pretrained(os.path.join(OUT, name)), path, arch)
            probe = TEXT + "<|im_start|>user\nhi<|im_end|><|endoftext|>"
            assert gtok.encode(probe) == tok.encode(probe), f"{path}: GGUF tokenizer differs from tokenizer.json"
            goldens(ref, gname, "gguf", dt, notes)
            print("wrote", gname)
    print("done")


if __name__ == "__main__":
    main()
