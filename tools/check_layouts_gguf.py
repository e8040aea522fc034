#!/usr/bin/env python3
"""Checks the bench files `vkllm bench --synthetic SHAPE:LAYOUT --write-gguf`
writes (layouts Q4_K_M and Q5_K_M: the per-tensor mix of llama.cpp's
llama-quantize) with llama.cpp's own GGUF reader, the gguf package
(tools/requirements.txt). Makes no testdata; prints one line per file and
exits 1 on the first wrong one.

    go build -o /tmp/vkllm ./cmd/vkllm
    python3 tools/check_layouts_gguf.py --vkllm /tmp/vkllm [--full]

By default it writes every shape at its tiny scale in both layouts, and
the full qwen2.5-0.5b:Q4_K_M (its 896-wide rows take llama.cpp's
fallbacks: Q5_0 for Q4_K, Q8_0 for Q6_K); --full writes every shape at
full scale (about 3 GB, one file at a time).

Per file: the reader parses it; general.architecture and
general.file_type are the layout's; every tensor's bytes are its type's
block size times its blocks; every matrix has the type llama-quantize
gives it (the rules of src/llama-quant.cpp's llama_tensor_get_type, written
here again, apart from the Go ones in internal/synth/layout.go); and the
first rows of every K-quant matrix dequantise (gguf.quants) to finite
weights of order 0.02.
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
LAYOUTS = {"Q4_K_M": (T.Q4_K, 15), "Q5_K_M": (T.Q5_K, 17)}
FALLBACK = {T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}


def more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def want_type(base, role, layer, n_layers, ncols, tied):
    if role == "output" or (role == "token_embd" and tied):
        t = T.Q8_0 if ncols % 256 else T.Q6_K
    elif role in ("attn_v", "ffn_down") and more_bits(layer, n_layers):
        t = T.Q6_K
    else:
        t = base
    if t in FALLBACK and ncols % 256:
        t = FALLBACK[t]
    return t


def field(r, key):
    f = r.fields[key]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v[0]


def check(path, layout):
    r = gguf.GGUFReader(path)
    arch = field(r, "general.architecture")
    base, ftype = LAYOUTS[layout]
    if field(r, "general.file_type") != ftype:
        return "general.file_type %s, want %d" % (field(r, "general.file_type"), ftype)
    n_layers = int(field(r, arch + ".block_count"))
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
        want = want_type(base, role, layer, n_layers, int(t.shape[0]), tied)
        if t.tensor_type != want:
            return "%s: %s, want %s" % (t.name, t.tensor_type.name, want.name)
        mix[want.name] = mix.get(want.name, 0) + 1
        if t.tensor_type in (T.Q4_K, T.Q5_K, T.Q6_K):
            rows = min(4, int(t.shape[1]))
            raw = np.asarray(t.data)[:rows]  # (rows, bytes per row) for quantised tensors
            w = gguf.quants.dequantize(raw, t.tensor_type)
            rms, mx = float(np.sqrt(np.mean(w.astype(np.float64) ** 2))), float(np.abs(w).max())
            if not np.isfinite(w).all() or not 0.003 < rms < 0.05 or mx > 0.2:
                return "%s %s: rms %.4f, max %.4f, want weights of order 0.02" % (t.name, t.tensor_type.name, rms, mx)
    return "ok %s, %d tensors, matrices %s" % (arch, len(r.tensors), " ".join("%s×%d" % kv for kv in sorted(mix.items())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vkllm", required=True, help="the built vkllm command (run as: vkllm bench …)")
    ap.add_argument("--full", action="store_true", help="every shape at full scale (about 3 GB written, one at a time)")
    a = ap.parse_args()
    specs = [(s if a.full else s + "-tiny", l) for s in SHAPES for l in LAYOUTS]
    if not a.full:
        specs.append(("qwen2.5-0.5b", "Q4_K_M"))
    bad = False
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
