"""Writes random-weight benchmark models as GGUF (not committed): a
Qwen2.5-0.5B-shaped Qwen2 (hidden 896, 24 layers, 14/2 heads, intermediate
4864, tied embeddings, qkv bias) with the Qwen3 vocabulary from
testdata/tokenizers (so llama.cpp can load it too).

    python tools/make_bench_model.py OUT_DIR [BF16 Q8_0 ...]
"""
import gzip, json, os, sys
import numpy as np
import gguf

out = sys.argv[1]
types = sys.argv[2:] or ["BF16", "Q8_0"]
os.makedirs(out, exist_ok=True)
tok = json.load(gzip.open("testdata/tokenizers/qwen3/tokenizer.json.gz"))
vocab = dict(tok["model"]["vocab"])
for a in tok["added_tokens"]:
    vocab[a["content"]] = a["id"]
tokens = [None] * (max(vocab.values()) + 1)
for t, i in vocab.items():
    tokens[i] = t
tokens = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)]
special = {a["id"] for a in tok["added_tokens"]}
merges = [" ".join(m) if isinstance(m, list) else m for m in tok["model"]["merges"]]
V, H, I, L, NH, NKV, HD = len(tokens), 896, 4864, 24, 14, 2, 64
rng = np.random.default_rng(0)

for name in types:
    qt = gguf.GGMLQuantizationType[name]
    path = os.path.join(out, f"qwen2.5-0.5b-shape-{name}.gguf")
    w = gguf.GGUFWriter(path, arch="qwen2")
    w.add_name("qwen2.5-0.5b-shaped random")
    w.add_context_length(32768); w.add_embedding_length(H); w.add_block_count(L)
    w.add_feed_forward_length(I); w.add_head_count(NH); w.add_head_count_kv(NKV)
    w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(1e6); w.add_file_type(int(qt))
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre("qwen2"); w.add_token_list(tokens)
    w.add_token_types([3 if i in special else 1 for i in range(V)]); w.add_token_merges(merges)
    w.add_bos_token_id(151643); w.add_eos_token_id(151645)

    def mat(n, rows, cols):
        a = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02)
        if qt == gguf.GGMLQuantizationType.F32:
            w.add_tensor(n, a)
        else:
            q = gguf.quants.quantize(a, qt)
            w.add_tensor(n, q, raw_shape=q.shape, raw_dtype=qt)

    def vec(n, size, base=0.0):
        w.add_tensor(n, (base + 0.02 * rng.standard_normal(size)).astype(np.float32))

    mat("token_embd.weight", V, H)
    vec("output_norm.weight", H, 1.0)
    for l in range(L):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", H, 1.0); vec(p + "ffn_norm.weight", H, 1.0)
        mat(p + "attn_q.weight", NH * HD, H); vec(p + "attn_q.bias", NH * HD)
        mat(p + "attn_k.weight", NKV * HD, H); vec(p + "attn_k.bias", NKV * HD)
        mat(p + "attn_v.weight", NKV * HD, H); vec(p + "attn_v.bias", NKV * HD)
        mat(p + "attn_output.weight", H, NH * HD)
        mat(p + "ffn_gate.weight", I, H); mat(p + "ffn_up.weight", I, H); mat(p + "ffn_down.weight", H, I)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    print("wrote", path, os.path.getsize(path))
