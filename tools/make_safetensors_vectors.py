"""Writes testdata/safetensors/python.safetensors with the Python safetensors
package, and python.json with what the Go reader must find in it.

    python tools/make_safetensors_vectors.py testdata/safetensors
"""
import json, os, sys
import numpy as np
import safetensors, torch
from safetensors.torch import save_file

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/safetensors"
os.makedirs(out, exist_ok=True)
g = torch.Generator().manual_seed(1234)
tensors = {
    "a.f32": torch.randn(3, 5, generator=g),
    "b.f16": torch.randn(4, 2, generator=g).half(),
    "c.bf16": torch.randn(2, 3, 2, generator=g).bfloat16(),
    "d.i64": torch.arange(-3, 4, dtype=torch.int64),
    "e.u8": torch.tensor([0, 1, 254, 255], dtype=torch.uint8),
    "f.bool": torch.tensor([True, False, True]),
    "g.scalar": torch.tensor(2.5),
    "h.empty": torch.zeros(0, 4),
    "i.f64": torch.randn(2, generator=g, dtype=torch.float64),
}
meta = {"format": "pt", "note": "written by tools/make_safetensors_vectors.py"}
path = os.path.join(out, "python.safetensors")
save_file(tensors, path, metadata=meta)
expect = {
    "versions": {"safetensors": safetensors.__version__, "torch": torch.__version__, "numpy": np.__version__},
    "metadata": meta,
    "tensors": {
        k: {"dtype": {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
                      torch.uint8: "U8", torch.bool: "BOOL", torch.float64: "F64"}[v.dtype],
            "shape": list(v.shape),
            "hex": v.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes().hex() if v.dtype != torch.bool
                   else v.numpy().astype(np.uint8).tobytes().hex()}
        for k, v in tensors.items()
    },
}
with open(os.path.join(out, "python.json"), "w") as f:
    json.dump(expect, f, indent=1, sort_keys=True)
print("wrote", path)
