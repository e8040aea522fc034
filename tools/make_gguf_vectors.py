"""Writes testdata/gguf/python.gguf with the Python gguf package (every
metadata type, nested arrays, tensors in several dtypes) and python.json
with what the Go reader must find in it.

    python tools/make_gguf_vectors.py testdata/gguf
"""
import json, os, sys
import numpy as np
import gguf

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/gguf"
os.makedirs(out, exist_ok=True)
path = os.path.join(out, "python.gguf")
w = gguf.GGUFWriter(path, arch="llama")
w.add_uint8("t.u8", 200)
w.add_int8("t.i8", -100)
w.add_uint16("t.u16", 60000)
w.add_int16("t.i16", -30000)
w.add_uint32("t.u32", 4000000000)
w.add_int32("t.i32", -2000000000)
w.add_float32("t.f32", 1.5)
w.add_uint64("t.u64", 2**63 + 5)
w.add_int64("t.i64", -(2**62))
w.add_float64("t.f64", 3.141592653589793)
w.add_bool("t.bool", True)
w.add_string("t.str", "héllo ✓")
w.add_array("t.arr_str", ["a", "", "ü"])
w.add_array("t.arr_i32", [1, -2, 3])
w.add_array("t.arr_f32", [0.5, -1.25])
w.add_array("t.arr_nested", [[1, 2], [3]])
rng = np.random.default_rng(7)
f32 = rng.standard_normal((3, 64)).astype(np.float32)
f16 = rng.standard_normal((2, 32)).astype(np.float16)
w.add_tensor("w.f32", f32)
w.add_tensor("w.f16", f16)
q8 = gguf.quants.quantize(f32, gguf.GGMLQuantizationType.Q8_0)
w.add_tensor("w.q8_0", q8, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
q4 = gguf.quants.quantize(f32, gguf.GGMLQuantizationType.Q4_0)
w.add_tensor("w.q4_0", q4, raw_dtype=gguf.GGMLQuantizationType.Q4_0)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

r = gguf.GGUFReader(path)
expect = {"versions": {"gguf": getattr(gguf, "__version__", "0.19.0"), "numpy": np.__version__}, "tensors": {}}
for t in r.tensors:
    expect["tensors"][t.name] = {"type": int(t.tensor_type), "ne": [int(x) for x in t.shape],
                                 "hex": bytes(t.data.tobytes()).hex()}
expect["kv"] = {
    "t.u8": 200, "t.i8": -100, "t.u16": 60000, "t.i16": -30000, "t.u32": 4000000000, "t.i32": -2000000000,
    "t.f32": 1.5, "t.u64": str(2**63 + 5), "t.i64": -(2**62), "t.f64": 3.141592653589793, "t.bool": True,
    "t.str": "héllo ✓", "t.arr_str": ["a", "", "ü"], "t.arr_i32": [1, -2, 3], "t.arr_f32": [0.5, -1.25],
    "general.architecture": "llama",
}
expect["keys"] = [f.name for f in r.fields.values()]
with open(os.path.join(out, "python.json"), "w") as f:
    json.dump(expect, f, indent=1, ensure_ascii=False)
print("wrote", path, os.path.getsize(path))
