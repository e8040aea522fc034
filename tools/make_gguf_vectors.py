"""Writes GGUF test vectors with the Python gguf package for tensor/gguf.

    /work/venv/bin/python tools/make_gguf_vectors.py testdata/gguf

Outputs (a few KB each):
  python.gguf / python.json       version 3, default alignment (32): every
                                  metadata type, arrays of every element type,
                                  nested arrays, tensors of every ggml type
                                  vkllm knows, 1-D to 4-D.
  python_v2.gguf / python_v2.json the same content with general.alignment = 64
                                  and the version field set to 2. gguf-py
                                  only writes version 3; a little-endian v2
                                  file is byte for byte a v3 file with
                                  version 2 (v3 only added big-endian files),
                                  so the one patched field makes a real v2.
  python_be.gguf                  a big-endian file (its version field reads
                                  0x03000000 little-endian): the Go reader
                                  must refuse it with ABI_MISMATCH.
  python_iq.gguf                  a tensor of a ggml type vkllm lacks
                                  (IQ2_XXS): the reader must name it in a
                                  *tensor.UnsupportedDTypeError.
  python_iq4.gguf / python_iq4.json
                                  IQ4_NL and IQ4_XS tensors (random bytes),
                                  version 3, default alignment, checked as
                                  python.gguf is.

The JSON files hold what the writer was given (key order as gguf.GGUFReader
reports it, value types, array element types, nested values) and, read back
by GGUFReader, each tensor's type id, ne (innermost first), absolute data
offset and bytes (hex). Non-nested values are cross-checked against
GGUFReader here; float32 values are stored as the float32's exact value.
"""
import json
import os
import sys
from importlib.metadata import version

import numpy as np
import gguf
from gguf import GGUFValueType as VT, GGMLQuantizationType as QT

out = sys.argv[1] if len(sys.argv) > 1 else "testdata/gguf"
os.makedirs(out, exist_ok=True)

# (key, type, element type for arrays, value)
META = [
    ("t.u8", VT.UINT8, None, 200),
    ("t.i8", VT.INT8, None, -100),
    ("t.u16", VT.UINT16, None, 60000),
    ("t.i16", VT.INT16, None, -30000),
    ("t.u32", VT.UINT32, None, 4000000000),
    ("t.i32", VT.INT32, None, -2000000000),
    ("t.f32", VT.FLOAT32, None, 0.1),
    ("t.bool", VT.BOOL, None, True),
    ("t.bool_false", VT.BOOL, None, False),
    ("t.str", VT.STRING, None, "héllo ✓"),
    ("t.str_empty", VT.STRING, None, ""),
    ("t.u64", VT.UINT64, None, 2**63 + 5),
    ("t.i64", VT.INT64, None, -(2**62) - 3),
    ("t.f64", VT.FLOAT64, None, 3.141592653589793),
    ("t.arr_u8", VT.ARRAY, VT.UINT8, [0, 255, 7]),
    ("t.arr_i8", VT.ARRAY, VT.INT8, [-128, 127, 0]),
    ("t.arr_u16", VT.ARRAY, VT.UINT16, [65535, 1]),
    ("t.arr_i16", VT.ARRAY, VT.INT16, [-32768, 32767]),
    ("t.arr_u32", VT.ARRAY, VT.UINT32, [4294967295, 0]),
    ("t.arr_i32", VT.ARRAY, VT.INT32, [1, -2, 3]),
    ("t.arr_f32", VT.ARRAY, VT.FLOAT32, [0.5, -1.25, 0.1]),
    ("t.arr_bool", VT.ARRAY, VT.BOOL, [True, False, True]),
    ("t.arr_str", VT.ARRAY, VT.STRING, ["a", "", "ü", "tab\tnl\n"]),
    ("t.arr_u64", VT.ARRAY, VT.UINT64, [2**64 - 1, 0]),
    ("t.arr_i64", VT.ARRAY, VT.INT64, [-(2**63), 2**63 - 1]),
    ("t.arr_f64", VT.ARRAY, VT.FLOAT64, [1e-300, -2.5]),
    # Nested arrays: gguf-py infers inner element types (int → INT32,
    # float → FLOAT32, str → STRING, bool → BOOL, list → ARRAY).
    ("t.arr_nested", VT.ARRAY, VT.ARRAY, [[1, 2], [3]]),
    ("t.arr_nested_mixed", VT.ARRAY, VT.ARRAY, [["x", "yz"], [0.5], [True]]),
    ("t.arr_nested3", VT.ARRAY, VT.ARRAY, [[[1], [2, 3]], [["s"]]]),
]


def f32(x):
    """The exact value of the float32 nearest x."""
    return float(np.float32(x))


def to_json(vtype, elem, value):
    """The value as the Go test reads it: arrays as {"elem", "values"}."""
    if vtype == VT.FLOAT32:
        return f32(value)
    if vtype != VT.ARRAY:
        return value
    if elem == VT.ARRAY:
        return {"elem": "ARRAY", "values": [to_json(VT.ARRAY, VT.get_type(v[0]), v) for v in value]}
    return {"elem": elem.name, "values": [to_json(elem, None, v) for v in value]}


rng = np.random.default_rng(7)


def tensors():
    """(name, ggml type, numpy shape in elements, raw bytes)."""
    x = rng.standard_normal((3, 64)).astype(np.float32)
    ts = [
        ("w.f32", QT.F32, (3, 64), x.tobytes()),
        ("w.f16", QT.F16, (2, 32), rng.standard_normal((2, 32)).astype(np.float16).tobytes()),
        ("w.bf16", QT.BF16, (2, 16), gguf.quants.quantize(x[:2, :16], QT.BF16).tobytes()),
        ("w.f64", QT.F64, (4,), rng.standard_normal(4).tobytes()),
        ("w.i8_4d", QT.I8, (2, 2, 2, 3), rng.integers(-128, 128, 24, dtype=np.int8).tobytes()),
        ("w.i16", QT.I16, (5,), rng.integers(-30000, 30000, 5, dtype=np.int16).tobytes()),
        ("w.i32_3d", QT.I32, (2, 1, 3), rng.integers(-2**31, 2**31, 6, dtype=np.int32).tobytes()),
        ("w.i64", QT.I64, (2,), np.array([-(2**63), 2**63 - 1], dtype=np.int64).tobytes()),
    ]
    for qt in (QT.Q8_0, QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1):
        ts.append((f"w.{qt.name.lower()}", qt, (3, 64), gguf.quants.quantize(x, qt).tobytes()))
    # Types gguf-py cannot quantize: random bytes of the right size (the
    # reader checks sizes, not values). Not Q8_1: gguf-py 0.19.0 sizes its
    # block as 40 bytes (the old float d, s layout), ggml's block_q8_1 is
    # 36 (half d, s), as is vkllm's; the Go tests cover Q8_1 themselves.
    for qt, shape in ((QT.Q2_K, (1, 256)), (QT.Q3_K, (1, 256)), (QT.Q4_K, (2, 1, 256)),
                      (QT.Q5_K, (1, 256)), (QT.Q6_K, (1, 256)), (QT.Q8_K, (1, 256))):
        bs, tsz = gguf.GGML_QUANT_SIZES[qt]
        n = int(np.prod(shape)) // bs * tsz
        ts.append((f"w.{qt.name.lower()}", qt, shape, rng.integers(0, 256, n, dtype=np.uint8).tobytes()))
    return ts


def write(path, meta, ts, alignment=None, endian=gguf.GGUFEndian.LITTLE):
    w = gguf.GGUFWriter(path, arch="llama", endianess=endian)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, vtype, elem, value in meta:
        w.add_key_value(key, value, vtype, sub_type=elem)
    for name, qt, shape, raw in ts:
        bs, tsz = gguf.GGML_QUANT_SIZES[qt]
        byte_shape = (*shape[:-1], shape[-1] // bs * tsz)
        w.add_tensor(name, np.frombuffer(raw, dtype=np.uint8).reshape(byte_shape), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def expect(path, meta, ts, alignment, file_version):
    declared = {"general.architecture": (VT.STRING, None, "llama")}
    if alignment is not None:
        declared["general.alignment"] = (VT.UINT32, None, alignment)
    for key, vtype, elem, value in meta:
        declared[key] = (vtype, elem, value)
    r = gguf.GGUFReader(path)
    kv = []
    for field in r.fields.values():
        if field.name.startswith("GGUF."):  # the header, not metadata
            continue
        vtype, elem, value = declared.pop(field.name)
        assert field.types[0] == vtype, (field.name, field.types)
        if vtype != VT.ARRAY or elem != VT.ARRAY:  # GGUFReader cannot read nested arrays back
            got = field.contents()
            want = [f32(v) for v in value] if elem == VT.FLOAT32 else value
            if vtype == VT.FLOAT32:
                got, want = f32(got), f32(value)
            assert got == want, (field.name, got, want)
        kv.append({"key": field.name, "type": vtype.name, "value": to_json(vtype, elem, value)})
    assert not declared, declared
    tens = []
    for t, (name, qt, shape, raw) in zip(r.tensors, ts, strict=True):
        assert t.name == name and t.tensor_type == qt and list(t.shape) == list(reversed(shape))
        data = bytes(np.asarray(t.data).tobytes())
        assert data == raw, name
        tens.append({"name": t.name, "type": int(t.tensor_type), "type_name": qt.name,
                     "ne": [int(x) for x in t.shape], "offset": int(t.data_offset), "hex": data.hex()})
    return {
        "generator": "tools/make_gguf_vectors.py",
        "versions": {"gguf": version("gguf"), "numpy": np.__version__},
        "version": file_version,
        "alignment": alignment or 32,
        "data_offset": int(r.data_offset),
        "kv": kv,
        "tensors": tens,
    }


def dump(exp, f):
    """JSON with one metadata entry or tensor a line."""
    f.write("{\n")
    items = list(exp.items())
    for i, (k, v) in enumerate(items):
        f.write(f" {json.dumps(k)}: ")
        if isinstance(v, list):
            f.write("[\n" + ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in v) + "\n ]")
        else:
            f.write(json.dumps(v, ensure_ascii=False))
        f.write(",\n" if i < len(items) - 1 else "\n")
    f.write("}\n")


ts = tensors()
for stem, alignment, file_version in (("python", None, 3), ("python_v2", 64, 2)):
    path = os.path.join(out, stem + ".gguf")
    write(path, META, ts, alignment)
    exp = expect(path, META, ts, alignment, file_version)
    if file_version == 2:
        with open(path, "r+b") as f:
            f.seek(4)
            assert f.read(4) == (3).to_bytes(4, "little")
            f.seek(4)
            f.write((2).to_bytes(4, "little"))
    with open(os.path.join(out, stem + ".json"), "w") as f:
        dump(exp, f)
    print("wrote", path, os.path.getsize(path))

be = os.path.join(out, "python_be.gguf")
write(be, META[:3], ts[:1], endian=gguf.GGUFEndian.BIG)
print("wrote", be, os.path.getsize(be))

iq = os.path.join(out, "python_iq.gguf")
bs, tsz = gguf.GGML_QUANT_SIZES[QT.IQ2_XXS]
write(iq, META[:1], [("w.iq2_xxs", QT.IQ2_XXS, (1, bs), bytes(tsz))])
print("wrote", iq, os.path.getsize(iq))

# IQ4_NL and IQ4_XS (gguf-py 0.19.0 cannot quantize them either): random
# bytes of the right size, from their own generator so that the files
# above keep their bytes.
iq4_rng = np.random.default_rng(41)
iq4 = []
for qt, shape in ((QT.IQ4_NL, (2, 64)), (QT.IQ4_XS, (1, 2, 256))):
    bs, tsz = gguf.GGML_QUANT_SIZES[qt]
    n = int(np.prod(shape)) // bs * tsz
    iq4.append((f"w.{qt.name.lower()}", qt, shape, iq4_rng.integers(0, 256, n, dtype=np.uint8).tobytes()))
path = os.path.join(out, "python_iq4.gguf")
write(path, META[:1], iq4)
with open(os.path.join(out, "python_iq4.json"), "w") as f:
    dump(expect(path, META[:1], iq4, None, 3), f)
print("wrote", path, os.path.getsize(path))
