"""Writes test vectors for tensor.Dequantize / tensor.Quantize from the
Python gguf package: testdata/quant/<TYPE>.deq.bin (raw blocks, then the
expected float32 values) and <TYPE>.q.bin (float32 input, then expected
bytes), plus manifest.json (versions, counts).

    python tools/make_quant_vectors.py testdata/quant
"""
import json, os, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/quant"
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(20261122)
manifest = {"versions": {"gguf": "0.19.0", "numpy": np.__version__}, "seed": 20261122, "dequantize": {}, "quantize": {}}

# Byte offsets of the f16 scale fields of each block type (set to finite values).
half_fields = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0], "Q8_1": [0, 2],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}
for name in ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]:
    qt = T[name]
    bs, bb = GGML_QUANT_SIZES[qt]
    nblocks = 8
    raw = rng.integers(0, 256, size=(nblocks, bb), dtype=np.uint8)
    for off in half_fields.get(name, []):
        h = (rng.standard_normal(nblocks) * 0.05).astype(np.float16)
        raw[:, off:off + 2] = h.view(np.uint8).reshape(nblocks, 2)
    if name == "F16":
        raw = (rng.standard_normal(nblocks * bb // 2) * 3).astype(np.float16).view(np.uint8).reshape(nblocks, bb)
    if name == "BF16":
        f = (rng.standard_normal(nblocks * bb // 2) * 3).astype(np.float32)
        raw = (f.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(nblocks, bb)
    if name == "Q8_K":
        d = (rng.standard_normal(nblocks) * 0.01).astype(np.float32)
        raw[:, 0:4] = d.view(np.uint8).reshape(nblocks, 4)
    vals = gguf.quants.dequantize(raw.reshape(-1), qt).astype(np.float32)
    assert np.all(np.isfinite(vals)), name
    with open(os.path.join(out, f"{name}.deq.bin"), "wb") as f:
        f.write(raw.tobytes())
        f.write(vals.tobytes())
    manifest["dequantize"][name] = {"elements": int(vals.size), "bytes": int(raw.size)}

for name in ["F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]:
    qt = T[name]
    x = (rng.standard_normal((6, 64)) * 2).astype(np.float32)
    x[1] = 0                  # all zeros
    x[2] = 0.75               # equal values
    x[3] = -np.abs(x[3])      # negatives
    x[4] *= 1e4               # large magnitudes
    x[5, :32] = np.linspace(-1, 1, 32, dtype=np.float32)  # ties at halves
    q = gguf.quants.quantize(x, qt)
    with open(os.path.join(out, f"{name}.q.bin"), "wb") as f:
        f.write(x.tobytes())
        f.write(q.tobytes())
    manifest["quantize"][name] = {"elements": int(x.size), "bytes": int(q.nbytes)}

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print("ok")
