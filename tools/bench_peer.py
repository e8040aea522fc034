"""llama.cpp side of benchmarks/bench: prefill pp tokens in one batch, then
decode tg tokens one at a time, with the same ids and threads; prints JSON.

    python tools/bench_peer.py MODEL.gguf PP TG THREADS [KV]

KV is the cache element type, f16 (llama.cpp's default) or f32.
"""
import json, sys, time
import llama_cpp

path, pp, tg, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
kv = {"f16": llama_cpp.GGML_TYPE_F16, "f32": llama_cpp.GGML_TYPE_F32}[sys.argv[5] if len(sys.argv) > 5 else "f16"]
llm = llama_cpp.Llama(model_path=path, n_ctx=pp + tg, n_batch=pp, n_ubatch=pp, n_threads=threads,
                      n_threads_batch=threads, type_k=kv, type_v=kv, verbose=False)
vocab = llm.n_vocab()
tok = lambda i: (i * 2654435761 + 12345) % (2**32) % vocab
t0 = time.perf_counter()
llm.eval([tok(i) for i in range(pp)])
pp_s = time.perf_counter() - t0
t0 = time.perf_counter()
for i in range(tg):
    llm.eval([tok(pp + i)])
tg_s = time.perf_counter() - t0
print(json.dumps({"pp_tps": pp / pp_s, "tg_tps": tg / tg_s, "llama_cpp_python": llama_cpp.__version__}))
