"""Writes test vectors for tensor.Dequantize / tensor.Quantize.

    /work/venv/bin/python tools/make_quant_vectors.py testdata/quant

Files (all little-endian, no headers; sizes are in manifest.json):
  <TYPE>.deq.bin  raw blocks (manifest "bytes"), then the expected float32
                  values (4 * manifest "elements" bytes).
  <TYPE>.q.bin    float32 input (4 * "elements" bytes), then the expected
                  quantised bytes ("bytes").
  manifest.json   versions, seed, and per type: elements, bytes, and the
                  reference that produced the expected values.

The reference is gguf.quants.dequantize / gguf.quants.quantize (gguf
0.19.0) wherever gguf implements the type. gguf 0.19.0 has no F64, Q8_1 or
Q8_K dequantisation (and its size table still gives Q8_1 the old 40-byte
float layout; ggml's block_q8_1 is 36 bytes: f16 d, f16 s, 32 int8), so for
those three the expected values come from numpy following ggml's
definition (value = d * q, each product rounded to float32), as the
manifest's "reference" says. The output is deterministic (fixed seed).
"""
import json
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

SEED = 20261122
NBLOCKS = 8  # random blocks per quantised type, plus 8 special ones

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/quant"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(SEED)
manifest = {
    "versions": {"gguf": version("gguf"), "numpy": np.__version__},
    "seed": SEED,
    "format": "<TYPE>.deq.bin: raw bytes then float32 expected; <TYPE>.q.bin: float32 input then expected bytes",
    "dequantize": {},
    "quantize": {},
}

# Block layouts (ggml-common.h): bytes per block and the byte offsets of
# the f16 scale fields, which are set to finite values.
BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q5_1": 24, "Q8_0": 34, "Q8_1": 36,
               "Q2_K": 84, "Q3_K": 110, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "Q8_K": 292,
               "IQ4_NL": 18, "IQ4_XS": 136}
BLOCK_SIZE = {k: 256 if k.endswith("_K") or k == "IQ4_XS" else 32 for k in BLOCK_BYTES}
HALF_FIELDS = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0], "Q8_1": [0, 2],
               "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
               "IQ4_NL": [0], "IQ4_XS": [0]}

# Our block sizes must agree with gguf's table (except Q8_1, see above).
for name, bb in BLOCK_BYTES.items():
    if name != "Q8_1":
        assert GGML_QUANT_SIZES[T[name]] == (BLOCK_SIZE[name], bb), name


def f16_bits(values):
    return np.asarray(values, dtype=np.float16).view(np.uint16)


def special_halves():
    """Edge f16 scale values: zeros, subnormals, the largest finite, 1."""
    return f16_bits([0.0, -0.0, 6e-8, -6.1e-5, 65504.0, -65504.0, 1.0, 0.5])


def random_blocks(name, rng=rng):
    bb = BLOCK_BYTES[name]
    raw = rng.integers(0, 256, size=(NBLOCKS + 8, bb), dtype=np.uint8)
    raw[NBLOCKS] = 0          # all-zero block
    raw[NBLOCKS + 1] = 0xFF   # all bits set (scale fields fixed below)
    for off in HALF_FIELDS.get(name, []):
        h = f16_bits(rng.standard_normal(NBLOCKS + 8) * 0.05)
        h[NBLOCKS:] = special_halves()   # one special scale per extra block
        raw[:, off:off + 2] = h.view(np.uint8).reshape(-1, 2)
    if name == "Q8_K":  # f32 d
        d = (rng.standard_normal(NBLOCKS + 8) * 0.01).astype(np.float32)
        d[NBLOCKS:] = [0.0, -0.0, 1e-40, -1e-30, 3e38, -1.0, 1.0, 0.5]
        raw[:, 0:4] = d.view(np.uint8).reshape(-1, 4)
    return raw.reshape(-1)


def ggml_q8(raw, bb, d_dtype, qs_off, nq):
    """ggml's dequantisation d * q for Q8_1 / Q8_K, in float32."""
    blocks = raw.reshape(-1, bb)
    d = blocks[:, :np.dtype(d_dtype).itemsize].copy().view(d_dtype).astype(np.float32)
    q = blocks[:, qs_off:qs_off + nq].copy().view(np.int8).astype(np.float32)
    with np.errstate(over="ignore"):  # d = 3e38 overflows on purpose
        return (d * q).reshape(-1)


def plain_bits(name, n):
    """Random non-NaN values plus every special class, as raw bits."""
    if name in ("F16", "BF16"):
        bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
        exp_all_ones = 0x7C00 if name == "F16" else 0x7F80
        mant = 0x03FF if name == "F16" else 0x007F
        nan = ((bits & exp_all_ones) == exp_all_ones) & ((bits & mant) != 0)
        bits[nan] &= ~np.uint16(exp_all_ones)  # make them finite
        special = [0x0000, 0x8000, 0x0001, 0x8001, mant, mant | 0x8000,  # zeros, smallest/largest subnormals
                   exp_all_ones, exp_all_ones | 0x8000,                  # infinities
                   exp_all_ones - 1, (exp_all_ones - 1) | 0x8000]        # largest finite
        bits[:len(special)] = special
        return bits
    if name == "F32":
        x = (rng.standard_normal(n) * 10).astype(np.float32)
        x[:8] = [0.0, -0.0, 1e-45, -1.17e-38, 3.4028235e38, -np.inf, np.inf, 1.0]
        return x.view(np.uint32)
    if name == "F64":
        x = rng.standard_normal(n) * 10
        # Rounding cases: ties to even, overflow to inf, underflow to subnormal/0.
        x[:10] = [0.0, -0.0, 1 + 2**-24, 1 + 3 * 2**-24, 1e39, -1e39, 1e-46, 7e-46, 1e-300, 3.4028235677973366e38]
        return x.view(np.uint64)
    raise ValueError(name)


def write(path, first, second):
    with open(os.path.join(out, path), "wb") as f:
        f.write(first)
        f.write(second)


# --- Dequantisation -----------------------------------------------------
for name in ["F32", "F16", "BF16", "F64"]:
    bits = plain_bits(name, 512)
    raw = bits.view(np.uint8).reshape(-1)
    if name == "F64":
        with np.errstate(over="ignore"):  # 1e39 -> inf on purpose
            vals = bits.view(np.float64).astype(np.float32)
        ref = "numpy float64.astype(float32)"
    else:
        vals = gguf.quants.dequantize(raw, T[name]).astype(np.float32)
        ref = "gguf.quants.dequantize"
    assert not np.any(np.isnan(vals)), name
    write(f"{name}.deq.bin", raw.tobytes(), vals.astype("<f4").tobytes())
    manifest["dequantize"][name] = {"elements": int(vals.size), "bytes": int(raw.size), "reference": ref}

for name in ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K"]:
    raw = random_blocks(name)
    if name == "Q8_1":
        vals = ggml_q8(raw, 36, np.float16, 4, 32)
        ref = "ggml definition d*q in numpy (gguf 0.19.0 lacks Q8_1)"
    elif name == "Q8_K":
        vals = ggml_q8(raw, 292, np.float32, 4, 256)
        ref = "ggml definition d*q in numpy (gguf 0.19.0 lacks Q8_K)"
    else:
        vals = gguf.quants.dequantize(raw, T[name]).astype(np.float32).reshape(-1)
        ref = "gguf.quants.dequantize"
    assert not np.any(np.isnan(vals)), name
    write(f"{name}.deq.bin", raw.tobytes(), vals.astype("<f4").tobytes())
    manifest["dequantize"][name] = {"elements": int(vals.size), "bytes": int(raw.size), "reference": ref}

# IQ4_NL and IQ4_XS (added later) draw from their own generator, so that the
# vectors above and below keep their bytes.
iq_rng = np.random.default_rng(SEED + 41)
for name in ["IQ4_NL", "IQ4_XS"]:
    raw = random_blocks(name, iq_rng)
    vals = gguf.quants.dequantize(raw, T[name]).astype(np.float32).reshape(-1)
    assert not np.any(np.isnan(vals)), name
    write(f"{name}.deq.bin", raw.tobytes(), vals.astype("<f4").tobytes())
    manifest["dequantize"][name] = {"elements": int(vals.size), "bytes": int(raw.size), "reference": "gguf.quants.dequantize"}


# --- Quantisation ---------------------------------------------------------
def quant_input():
    """Rows of 64 floats (two 32-element blocks), random and edge cases."""
    rows = [rng.standard_normal(64) * 2 for _ in range(8)]
    rows.append(np.zeros(64))                                   # all zeros
    rows.append(np.full(64, 0.75))                              # equal values
    rows.append(np.full(64, -3.0))                              # equal negatives
    rows.append(-np.abs(rng.standard_normal(64)))               # all negative
    rows.append(rng.standard_normal(64) * 1e4)                  # large: f16 scale overflows for Q4_0
    rows.append(rng.standard_normal(64) * 1e37)                 # huge: max - min overflows float32
    rows.append(np.concatenate([[3.4e38, -3.4e38], rng.standard_normal(62)]))
    rows.append(rng.standard_normal(64) * 1e-6)                 # f16-subnormal scales
    rows.append(rng.standard_normal(64) * 1e-38)                # float32-subnormal: 1/d overflows
    rows.append(np.linspace(-1, 1, 64))
    r = np.zeros(64)
    r[0], r[1:32] = 127.0, np.arange(31) - 15.5                 # Q8_0: amax 127 -> d = 1, ties at halves
    r[32], r[33:] = -8.0, (np.arange(31) - 15) / 2              # Q4_0: d = 1, x*id + 8.5 on halves
    rows.append(r)
    rows.append(np.concatenate([[2.0, -2.0], rng.standard_normal(30), [-5.0, 5.0], rng.standard_normal(30)]))  # |max| ties
    return np.stack(rows).astype(np.float32)


def f16_edge_input():
    """Float32 values at and around f16 rounding boundaries."""
    h = np.array([0x0000, 0x0001, 0x0002, 0x03FF, 0x0400, 0x3C00, 0x3C01, 0x7BFE, 0x7BFF], dtype=np.uint16)
    lo = h.view(np.float16).astype(np.float64)
    hi = (h + 1).view(np.float16).astype(np.float64)  # 0x7C00 is inf: midpoint 65520 overflows
    hi[-1] = 65536.0
    mid = ((lo + hi) / 2).astype(np.float32)  # exact halfway points
    vals = np.concatenate([mid, -mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(0)),
                           [65519.996, 65520.0, 1e-8, 2.9802322e-08, 2.9802326e-08, np.inf, -np.inf]])
    return vals.astype(np.float32)


def bf16_edge_input():
    b = np.array([0x3F80, 0x3F81, 0x7F7F, 0x0001, 0x007F], dtype=np.uint32) << 16
    vals = np.concatenate([b | 0x8000, b | 0x7FFF, b | 0x8001, (b | 0x8000) | 0x80000000,
                           np.array([0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000], dtype=np.uint32)])
    return vals.astype(np.uint32).view(np.float32)


base = quant_input()
for name in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]:
    x = base.reshape(-1)
    if name == "F16":
        x = np.concatenate([x, f16_edge_input()])
    elif name == "BF16":
        x = np.concatenate([x, bf16_edge_input()])
    x = np.pad(x, (0, (-x.size) % 32)).astype(np.float32).reshape(-1, 32)
    assert not np.any(np.isnan(x))
    with np.errstate(all="ignore"):  # the huge and tiny rows overflow on purpose
        q = gguf.quants.quantize(x, T[name])
    qb = np.ascontiguousarray(q).view(np.uint8).reshape(-1)
    write(f"{name}.q.bin", x.astype("<f4").tobytes(), qb.tobytes())
    manifest["quantize"][name] = {"elements": int(x.size), "bytes": int(qb.size), "reference": "gguf.quants.quantize"}

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")
total = sum(os.path.getsize(os.path.join(out, p)) for p in os.listdir(out))
print(f"wrote {out}: {total} bytes")
