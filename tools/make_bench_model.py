"""Writes random-weight benchmark models as GGUF (not committed), for
`vkllm bench` (cmd/vkllm):

  qwen2.5-0.5b-shape  Qwen2 (hidden 896, 24 layers, 14/2 heads, intermediate
                      4864, tied embeddings, qkv bias) with the Qwen3
                      vocabulary from testdata/tokenizers;
  llama-3.2-1b-shape  Llama (hidden 2048, 16 layers, 32/8 heads, intermediate
                      8192, tied embeddings, rope theta 5e5) with the Llama 3
                      vocabulary from testdata/tokenizers;

so that llama.cpp can load them too. Weights are N(0, 0.02²).

    python tools/make_bench_model.py OUT_DIR [--shape qwen2.5-0.5b,llama-3.2-1b] [F16 BF16 Q8_0 Q4_0 Q4_K ...]

gguf-py (0.19) cannot quantise K-quants (NotImplementedError), so a Q4_K
model gets random Q4_K blocks (random 6-bit sub-scales, mins and nibbles, and
small f16 super-block scales) for every matrix whose rows are whole 256-blocks;
the Qwen shape's 896-wide matrices cannot be Q4_K and are written as Q4_0
(llama.cpp's quantizer falls back the same way). The file type says Q4_K_M
loosely: the bench reads the tensors' own types.
"""
import gzip, json, os, sys
import numpy as np
import gguf

SHAPES = {
    # name: arch, tokenizer dir, pre-tokenizer, hidden, layers, heads, kv heads, head dim, intermediate, theta, eps, bias, bos, eos
    "qwen2.5-0.5b": dict(arch="qwen2", tok="qwen3", pre="qwen2", H=896, L=24, NH=14, NKV=2, HD=64, I=4864,
                         theta=1e6, eps=1e-6, bias=True, bos=151643, eos=151645),
    "llama-3.2-1b": dict(arch="llama", tok="llama3", pre="llama-bpe", H=2048, L=16, NH=32, NKV=8, HD=64, I=8192,
                         theta=5e5, eps=1e-5, bias=False, bos=128000, eos=128009),
}


def vocabulary(name):
    tok = json.load(gzip.open(f"testdata/tokenizers/{name}/tokenizer.json.gz"))
    vocab = dict(tok["model"]["vocab"])
    for a in tok["added_tokens"]:
        vocab[a["content"]] = a["id"]
    tokens = [None] * (max(vocab.values()) + 1)
    for t, i in vocab.items():
        tokens[i] = t
    tokens = [t if t is not None else f"[PAD{i}]" for i, t in enumerate(tokens)]
    special = {a["id"] for a in tok["added_tokens"]}
    merges = [" ".join(m) if isinstance(m, list) else m for m in tok["model"]["merges"]]
    return tokens, special, merges


def random_q4_k(rng, rows, cols):
    """Random Q4_K blocks: d, dmin f16, scales[12], qs[128] per 256 values."""
    nb = rows * cols // 256
    blocks = rng.integers(0, 256, size=(nb, 144), dtype=np.uint8)
    # d ≈ 0.02/(32·8) and dmin ≈ d/2: values of order 0.02.
    d = np.full(nb, 0.02 / 256, dtype=np.float16).view(np.uint8).reshape(nb, 2)
    dmin = np.full(nb, 0.01 / 256, dtype=np.float16).view(np.uint8).reshape(nb, 2)
    blocks[:, 0:2], blocks[:, 2:4] = d, dmin
    return blocks.reshape(rows, cols // 256 * 144)


def write(out, shape, name, rng):
    s = SHAPES[shape]
    qt = gguf.GGMLQuantizationType[name]
    tokens, special, merges = vocabulary(s["tok"])
    V, H, I, L, NH, NKV, HD = len(tokens), s["H"], s["I"], s["L"], s["NH"], s["NKV"], s["HD"]
    path = os.path.join(out, f"{shape}-shape-{name}.gguf")
    w = gguf.GGUFWriter(path, arch=s["arch"])
    w.add_name(f"{shape}-shaped random")
    w.add_context_length(32768); w.add_embedding_length(H); w.add_block_count(L)
    w.add_feed_forward_length(I); w.add_head_count(NH); w.add_head_count_kv(NKV)
    w.add_layer_norm_rms_eps(s["eps"]); w.add_rope_freq_base(s["theta"])
    if s["arch"] == "llama":
        w.add_rope_dimension_count(HD); w.add_vocab_size(V)
    w.add_file_type({"Q4_K": 15}.get(name, int(qt)))
    w.add_tokenizer_model("gpt2"); w.add_tokenizer_pre(s["pre"]); w.add_token_list(tokens)
    w.add_token_types([3 if i in special else 1 for i in range(V)]); w.add_token_merges(merges)
    w.add_bos_token_id(s["bos"]); w.add_eos_token_id(s["eos"])

    def mat(n, rows, cols):
        if qt == gguf.GGMLQuantizationType.Q4_K:
            if cols % 256 == 0:
                w.add_tensor(n, random_q4_k(rng, rows, cols), raw_shape=(rows, cols // 256 * 144), raw_dtype=qt)
                return
            t = gguf.GGMLQuantizationType.Q4_0
        else:
            t = qt
        a = rng.standard_normal((rows, cols), dtype=np.float32) * 0.02
        if t == gguf.GGMLQuantizationType.F32:
            w.add_tensor(n, a)
        else:
            q = gguf.quants.quantize(a, t)
            w.add_tensor(n, q, raw_shape=q.shape, raw_dtype=t)

    def vec(n, size, base=0.0):
        w.add_tensor(n, (base + 0.02 * rng.standard_normal(size)).astype(np.float32))

    mat("token_embd.weight", V, H)
    vec("output_norm.weight", H, 1.0)
    for l in range(L):
        p = f"blk.{l}."
        vec(p + "attn_norm.weight", H, 1.0); vec(p + "ffn_norm.weight", H, 1.0)
        mat(p + "attn_q.weight", NH * HD, H)
        mat(p + "attn_k.weight", NKV * HD, H)
        mat(p + "attn_v.weight", NKV * HD, H)
        if s["bias"]:
            vec(p + "attn_q.bias", NH * HD); vec(p + "attn_k.bias", NKV * HD); vec(p + "attn_v.bias", NKV * HD)
        mat(p + "attn_output.weight", H, NH * HD)
        mat(p + "ffn_gate.weight", I, H); mat(p + "ffn_up.weight", I, H); mat(p + "ffn_down.weight", H, I)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    print("wrote", path, os.path.getsize(path), flush=True)


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help") or args[0].startswith("-"):
        sys.exit(__doc__)
    out, shapes, types = args[0], list(SHAPES), []
    i = 1
    while i < len(args):
        if args[i] == "--shape":
            shapes = args[i + 1].split(","); i += 2
        elif args[i].startswith("-"):
            sys.exit(f"unknown flag {args[i]}\n\n{__doc__}")
        else:
            types.append(args[i]); i += 1
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        sys.exit(f"unknown shape {unknown}; known: {list(SHAPES)}")
    types = types or ["F16", "BF16", "Q8_0", "Q4_0", "Q4_K"]
    os.makedirs(out, exist_ok=True)
    for shape in shapes:
        for name in types:
            write(out, shape, name, np.random.default_rng(0))


if __name__ == "__main__":
    main()
