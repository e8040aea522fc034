"""Cross-checks the tiny GGUF copies of testdata/models against llama.cpp
(llama-cpp-python, tools/requirements-peer.txt): the files' metadata, Q/K
permutation, rope_freqs and tokenizer are right if llama.cpp reproduces the
transformers goldens. Makes no testdata; prints one line per file.

    python tools/check_tiny_gguf_llamacpp.py testdata

Per file: the largest |llama.cpp logit - golden logit| / max|golden logit|
over every prompt position (F32 KV cache), and for how many of the 4x32
greedy steps llama.cpp's own greedy continuation agrees before it first
differs. Expect about 1e-6 for F32; for the other types llama.cpp multiplies
with activations rounded to F16/BF16/Q8, so percent-level differences and
divergence at the tiny models' near ties are expected there.
"""
import json, os, sys

import llama_cpp
import numpy as np
from tokenizers import Tokenizer

models = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "testdata", "models")
TEXT = "The quick brown fox, Hello world! It's 12345 <|im_start|>user\n"
F32 = 0  # GGML_TYPE_F32 for the KV cache
bad = False
for arch in ["qwen2-tiny", "llama-tiny"]:
    ref_tok = Tokenizer.from_file(os.path.join(models, arch, "tokenizer.json"))
    for dt in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1"]:
        name = f"{arch}-{dt}"
        g = json.load(open(os.path.join(models, name + ".golden.json")))
        llm = llama_cpp.Llama(model_path=os.path.join(models, name + ".gguf"), n_ctx=128, n_batch=128, n_ubatch=128,
                              n_threads=2, logits_all=True, type_k=F32, type_v=F32, verbose=False)
        worst, agree = 0.0, []
        for p in g["prompts"]:
            llm.reset()
            llm.eval(p["tokens"])
            got = np.array(llm.scores[:len(p["tokens"])], dtype=np.float32)
            want = np.array(p["logits"], dtype=np.float32)
            worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
            n = 0
            for want_tok in p["greedy"]:
                nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
                if nxt != want_tok:
                    break
                n += 1
                llm.eval([nxt])
            agree.append(n)
        tok_ok = llm.tokenize(TEXT.encode(), add_bos=False, special=True) == ref_tok.encode(TEXT).ids
        print(f"{name:16s} max rel logit diff {worst:.2e}  greedy steps agreeing {agree}  tokenizer {'same' if tok_ok else 'DIFFERENT'}")
        bad |= not tok_ok or (dt == "F32" and (worst > 1e-5 or agree != [32] * 4))
sys.exit(1 if bad else 0)
