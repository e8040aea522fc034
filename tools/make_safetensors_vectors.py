"""Writes safetensors files with the Python packages, and JSON files saying
what the Go reader (tensor/safetensors) must find in them:

  python.safetensors / python.json   one file, every dtype vkllm reads
                                     (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL),
                                     a scalar, an empty tensor, metadata
  sharded/                           model.safetensors.index.json and two shards
                                     from huggingface_hub.save_torch_state_dict
  unsupported.safetensors            valid file with F8_E4M3 and U16 tensors
                                     (must give *tensor.UnsupportedDTypeError)

Run from the repository root (any venv with torch, safetensors, huggingface_hub):

    /work/venv/bin/python tools/make_safetensors_vectors.py testdata/safetensors
"""
import json, os, shutil, struct, sys

import numpy as np
import safetensors, torch, huggingface_hub
from safetensors.torch import save_file

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/safetensors"
os.makedirs(out, exist_ok=True)
g = torch.Generator().manual_seed(1234)

NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
         torch.uint8: "U8", torch.bool: "BOOL"}


def raw(v):
    """The tensor's bytes, row-major little-endian, as safetensors stores them."""
    v = v.contiguous().reshape(-1)
    if v.dtype == torch.bool:
        return v.to(torch.uint8).numpy().tobytes()
    return v.view(torch.uint8).numpy().tobytes()


def header(path):
    """The file's JSON header, read by hand (independent of the Go reader)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def describe(tensors, path):
    hdr = header(path)
    order = sorted((k for k in hdr if k != "__metadata__"), key=lambda k: hdr[k]["data_offsets"])
    return {
        "order": order,  # names by data offset: the order Go's Tensors() returns
        "tensors": {k: {"dtype": NAMES[v.dtype], "shape": list(v.shape), "hex": raw(v).hex()}
                    for k, v in tensors.items()},
    }


versions = {"safetensors": safetensors.__version__, "torch": torch.__version__,
            "numpy": np.__version__, "huggingface_hub": huggingface_hub.__version__}

# One file, every dtype.
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
    "j.i32": torch.tensor([[-2147483648, 2147483647], [1, -1]], dtype=torch.int32),
    "k.i16": torch.tensor([-32768, 32767, 7], dtype=torch.int16),
    "l.i8": torch.tensor([-128, 127, 0, -1, 5], dtype=torch.int8),
    "m.bf16.odd": (torch.randn(7, generator=g) * 1000).bfloat16(),
}
meta = {"format": "pt", "note": "written by tools/make_safetensors_vectors.py", "ünïcode": "<&> \"q\""}
path = os.path.join(out, "python.safetensors")
save_file(tensors, path, metadata=meta)
with open(os.path.join(out, "python.json"), "w") as f:
    json.dump({"versions": versions, "metadata": meta, **describe(tensors, path)}, f, indent=1, sort_keys=True)

# A sharded checkpoint as transformers writes it (index + shards).
shard_dir = os.path.join(out, "sharded")
shutil.rmtree(shard_dir, ignore_errors=True)
os.makedirs(shard_dir)
sharded = {
    "model.embed_tokens.weight": torch.randn(8, 4, generator=g).bfloat16(),
    "model.layers.0.mlp.up_proj.weight": torch.randn(6, 4, generator=g),
    "model.layers.0.input_layernorm.weight": torch.ones(4),
    "model.norm.weight": torch.randn(4, generator=g).half(),
    "lm_head.weight": torch.randn(8, 4, generator=g),
}
huggingface_hub.save_torch_state_dict(sharded, shard_dir, max_shard_size=160, metadata={"format": "pt"})
with open(os.path.join(shard_dir, "model.safetensors.index.json")) as f:
    index = json.load(f)
assert len(set(index["weight_map"].values())) >= 2, "want at least two shards"
expect = {"versions": versions, "index_metadata": {k: v if isinstance(v, str) else json.dumps(v)
                                                   for k, v in index["metadata"].items()},
          "tensors": {k: {"dtype": NAMES[v.dtype], "shape": list(v.shape), "hex": raw(v).hex()}
                      for k, v in sharded.items()}}
with open(os.path.join(out, "sharded.json"), "w") as f:
    json.dump(expect, f, indent=1, sort_keys=True)

# A valid file whose dtypes vkllm does not read.
save_file({"scale": torch.ones(2), "w.f8": torch.zeros(3, dtype=torch.float8_e4m3fn),
           "w.u16": torch.zeros(2, dtype=torch.uint16)}, os.path.join(out, "unsupported.safetensors"))

for root, _, files in os.walk(out):
    for name in files:
        os.chmod(os.path.join(root, name), 0o644)
print("wrote", out, versions)
