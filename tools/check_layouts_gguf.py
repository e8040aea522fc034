#!/usr/bin/env python3
"""Checks the bench files `vkllm bench --synthetic SHAPE:TYPE --write-gguf`
writes (layouts Q4_K_M, Q5_K_M and IQ4_XS: the per-tensor mix of llama.cpp's
llama-quantize; and the one-type files of the dtypes with random blocks,
Q2_K, Q3_K, Q5_K, Q6_K and IQ4_NL) with llama.cpp's own GGUF reader, the
gguf package (tools/requirements.txt). Makes no testdata; prints one line
per file and exits 1 if one is wrong.

    go build -o /tmp/vkllm ./cmd/vkllm
    python3 tools/check_layouts_gguf.py --vkllm /tmp/vkllm [--full]
    python3 tools/check_layouts_gguf.py --files TYPE=PATH ...

By default it writes every shape at its tiny scale in every layout, the
one-type files at the tiny Llama-3.2-1B shape, and the full
qwen2.5-0.5b:Q4_K_M and qwen2.5-0.5b:IQ4_XS (their 896-wide rows take
llama.cpp's fallbacks: Q5_0 for Q4_K, IQ4_NL for IQ4_XS, Q5_1 for Q5_K,
Q8_0 for Q6_K); --full writes every shape at full scale in the layouts
(about 4.5 GB, one file at a time). --files checks files already written
(internal/synth's TestGGUFPy writes them).

Per file: the reader parses it; general.architecture and
general.file_type are the type's; every tensor's bytes are its type's
block size times its blocks; every matrix has the type llama-quantize
gives it (the rules of src/llama-quant.cpp's llama_tensor_get_type and
tensor_type_fallback, written here again, apart from the Go ones in
internal/synth/layout.go); and the first rows of every matrix of random
blocks dequantise (gguf.quants) to finite weights of order 0.02.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

SHAPES = ["qwen2.5-0.5b", "llama-3.2-1b", "qwen3-0.6b"]
# file type name: (base type, general.file_type)
LAYOUTS = {"Q4_K_M": (T.Q4_K, 15), "Q5_K_M": (T.Q5_K, 17), "IQ4_XS": (T.IQ4_XS, 30)}
PURE = {"Q2_K": (T.Q2_K, 10), "Q3_K": (T.Q3_K, 11), "Q5_K": (T.Q5_K, 16), "Q6_K": (T.Q6_K, 18), "IQ4_NL": (T.IQ4_NL, 25)}
FALLBACK = {T.IQ4_XS: T.IQ4_NL, T.Q2_K: T.Q4_0, T.Q3_K: T.Q4_0, T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}
RANDOM = (T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL, T.IQ4_XS)


def more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def want_type(ftype, base, role, layer, n_layers, ncols, tied, gqa):
    t = base
    if ftype in PURE:
        pass
    elif role == "output" or (role == "token_embd" and tied):
        t = T.Q8_0 if ncols % gguf.GGML_QUANT_SIZES[base][0] else T.Q6_K
    elif ftype in ("Q4_K_M", "Q5_K_M"):
        if role in ("attn_v", "ffn_down") and more_bits(layer, n_layers):
            t = T.Q6_K
    elif ftype == "IQ4_XS":
        if role == "attn_v" and gqa >= 4:
            t = T.Q5_K
        elif role == "ffn_down" and layer < n_layers // 8:
            t = T.Q5_K
    if ncols % gguf.GGML_QUANT_SIZES[t][0]:
        t = FALLBACK.get(t, t)
    return t


def field(r, key):
    f = r.fields[key]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v[0]


def check(path, name):
    r = gguf.GGUFReader(path)
    arch = field(r, "general.architecture")
    base, ftype = LAYOUTS[name] if name in LAYOUTS else PURE[name]
    if field(r, "general.file_type") != ftype:
        return "general.file_type %s, want %d" % (field(r, "general.file_type"), ftype)
    n_layers = int(field(r, arch + ".block_count"))
    gqa = int(field(r, arch + ".attention.head_count")) // int(field(r, arch + ".attention.head_count_kv"))
    names = {t.name for t in r.tensors}
    tied = "output.weight" not in names
    mix = {}
    for t in r.tensors:
        block, size = gguf.GGML_QUANT_SIZES[t.tensor_type]
        n = int(np.prod(t.shape))
        if n % block or t.n_bytes != n // block * size:
            return "%s: %d bytes for %s %s" % (t.name, t.n_bytes, t.tensor_type.name, list(t.shape))
        if len(t.shape) == 1:
            if t.tensor_type != T.F32:
                return "%s: %s, want F32" % (t.name, t.tensor_type.name)
            continue
        parts = t.name.split(".")
        layer, role = (int(parts[1]), parts[2]) if parts[0] == "blk" else (-1, parts[0])
        want = want_type(name, base, role, layer, n_layers, int(t.shape[0]), tied, gqa)
        if t.tensor_type != want:
            return "%s: %s, want %s" % (t.name, t.tensor_type.name, want.name)
        mix[want.name] = mix.get(want.name, 0) + 1
        if t.tensor_type in RANDOM:
            rows = min(4, int(t.shape[1]))
            raw = np.asarray(t.data)[:rows]  # (rows, bytes per row) for quantised tensors
            w = gguf.quants.dequantize(raw, t.tensor_type)
            rms, mx = float(np.sqrt(np.mean(w.astype(np.float64) ** 2))), float(np.abs(w).max())
            if not np.isfinite(w).all() or not 0.003 < rms < 0.05 or mx > 0.2:
                return "%s %s: rms %.4f, max %.4f, want weights of order 0.02" % (t.name, t.tensor_type.name, rms, mx)
    return "ok %s, %d tensors, matrices %s" % (arch, len(r.tensors), " ".join("%s×%d" % kv for kv in sorted(mix.items())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vkllm", help="the built vkllm command (run as: vkllm bench …)")
    ap.add_argument("--full", action="store_true", help="every shape at full scale (about 4.5 GB written, one at a time)")
    ap.add_argument("--files", nargs="+", metavar="TYPE=PATH", help="check these files, of these layouts or one-type dtypes, instead")
    a = ap.parse_args()
    bad = False
    if a.files:
        for arg in a.files:
            name, _, path = arg.partition("=")
            if name not in LAYOUTS and name not in PURE:
                sys.exit("unknown type %s (layouts %s, one-type %s)" % (name, " ".join(LAYOUTS), " ".join(PURE)))
            msg = check(path, name)
            print("%-8s %s %s" % (name, os.path.basename(path), msg), flush=True)
            bad |= not msg.startswith("ok")
        sys.exit(1 if bad else 0)
    if not a.vkllm:
        ap.error("give --vkllm or --files")
    specs = [(s if a.full else s + "-tiny", l) for s in SHAPES for l in LAYOUTS]
    if not a.full:
        specs += [("llama-3.2-1b-tiny", p) for p in PURE]
        specs += [("qwen2.5-0.5b", "Q4_K_M"), ("qwen2.5-0.5b", "IQ4_XS")]
    with tempfile.TemporaryDirectory() as d:
        for shape, layout in specs:
            spec = shape + ":" + layout
            path = os.path.join(d, spec.replace(":", "-") + ".gguf")
            subprocess.run([a.vkllm, "bench", "--synthetic", spec, "--write-gguf", path], check=True, capture_output=True)
            msg = check(path, layout)
            os.remove(path)
            print("%-24s %s" % (spec, msg), flush=True)
            bad |= not msg.startswith("ok")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
