package gguf

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

// fb builds a GGUF file by hand; mark records the offset of the field a
// case expects the error at.
type fb struct {
	b  []byte
	at int64
}

func (w *fb) mark() *fb           { w.at = int64(len(w.b)); return w }
func (w *fb) raw(s string) *fb    { w.b = append(w.b, s...); return w }
func (w *fb) u8(v uint8) *fb      { w.b = append(w.b, v); return w }
func (w *fb) u32(v uint32) *fb    { w.b = binary.LittleEndian.AppendUint32(w.b, v); return w }
func (w *fb) u64(v uint64) *fb    { w.b = binary.LittleEndian.AppendUint64(w.b, v); return w }
func (w *fb) str(s string) *fb    { return w.u64(uint64(len(s))).raw(s) }
func (w *fb) zeros(n int) *fb     { w.b = append(w.b, make([]byte, n)...); return w }
func (w *fb) typ(t ValueType) *fb { return w.u32(uint32(t)) }

// head writes magic, version 3 and the counts.
func (w *fb) head(nTensors, nKV uint64) *fb { return w.raw(Magic).u32(3).u64(nTensors).u64(nKV) }

// kvU8 writes one UINT8 entry.
func (w *fb) kvU8(key string, v uint8) *fb { return w.str(key).typ(Uint8).u8(v) }

// alignment writes a general.alignment entry of type t, marking its value
// (a string "x" for STRING).
func (w *fb) alignment(t ValueType, v uint64) *fb {
	w.str("general.alignment").typ(t).mark()
	switch t.size() {
	case 1:
		return w.u8(uint8(v))
	case 4:
		return w.u32(uint32(v))
	case 8:
		return w.u64(v)
	}
	return w.str("x")
}

// info writes a tensor info; the mark goes where at says: "name", "dims"
// (n_dims), "ne0" (the first dimension), "dim" (the last), "offset" or ""
// (no mark).
func (w *fb) info(name string, ne []uint64, typ uint32, off uint64, at string) *fb {
	if at == "name" {
		w.mark()
	}
	w.str(name)
	if at == "dims" {
		w.mark()
	}
	w.u32(uint32(len(ne)))
	for i, d := range ne {
		if at == "dim" && i == len(ne)-1 || at == "ne0" && i == 0 {
			w.mark()
		}
		w.u64(d)
	}
	w.u32(typ)
	if at == "offset" {
		w.mark()
	}
	return w.u64(off)
}

// data pads to 32 and appends n data bytes.
func (w *fb) data(n int) *fb {
	for len(w.b)%32 != 0 {
		w.b = append(w.b, 0)
	}
	return w.zeros(n)
}

const f32, f64, q8 = 0, 28, 8 // ggml type ids

// hostileCase is a malformed file and what Parse must say of it.
type hostileCase struct {
	name   string
	build  func(w *fb)
	reason string // a substring of the error's reason
}

// hostileCases covers the known attacks on GGUF loaders; each must fail with
// *tensor.CorruptError at the marked offset (0 when nothing is marked).
var hostileCases = []hostileCase{
	{"empty", func(w *fb) {}, "not a GGUF file"},
	{"short magic", func(w *fb) { w.raw("GG") }, "not a GGUF file"},
	{"wrong magic", func(w *fb) { w.raw("GGML").u32(3) }, "not a GGUF file"},
	{"no version", func(w *fb) { w.raw(Magic).mark().raw("\x03\x00") }, "version"},
	{"no counts", func(w *fb) { w.raw(Magic).u32(3).mark().u32(0) }, "tensor count"},
	{"tensor count huge", func(w *fb) { w.raw(Magic).u32(3).mark().u64(1 << 60).u64(0) }, "cannot fit"},
	{"tensor count max", func(w *fb) { w.raw(Magic).u32(3).mark().u64(1<<64 - 1).u64(0) }, "cannot fit"},
	{"kv count huge", func(w *fb) { w.raw(Magic).u32(3).u64(0).mark().u64(1 << 40) }, "cannot fit"},
	{"counts fit alone, not together", func(w *fb) {
		w.raw(Magic).u32(3).mark().u64(2).u64(2).zeros(2 * 24) // 48 bytes: 2 infos or 2 entries, not both
	}, "cannot fit"},
	{"key length past end", func(w *fb) { w.head(0, 1).mark().u64(1 << 50).zeros(5) }, "exceeds"},
	{"key length max", func(w *fb) { w.head(0, 1).mark().u64(1<<64 - 1).zeros(5) }, "exceeds"},
	{"key not UTF-8", func(w *fb) { w.head(0, 1).mark().str("k\xff\xfe").typ(Uint8).u8(0) }, "UTF-8"},
	{"duplicate key", func(w *fb) { w.head(0, 2).kvU8("k", 1).mark().kvU8("k", 2) }, "duplicate key"},
	{"unknown value type", func(w *fb) { w.head(0, 1).str("k").mark().u32(13).u64(0) }, "unknown value type"},
	{"value type max", func(w *fb) { w.head(0, 1).str("k").mark().u32(1<<32 - 1).u64(0) }, "unknown value type"},
	{"truncated value", func(w *fb) { w.head(0, 1).str("k").typ(Uint64).mark().u32(0).u8(0) }, "needs 8 bytes"},
	{"bool byte 2", func(w *fb) { w.head(0, 1).str("k").typ(Bool).mark().u8(2).zeros(3) }, "bool byte"},
	{"string value too long", func(w *fb) { w.head(0, 1).str("k").typ(String).mark().u64(100).raw("short") }, "exceeds"},
	{"array elem type unknown", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).mark().u32(13).u64(0) }, "unknown array element type"},
	{"array count × size overflows", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(Uint64).mark().u64(1 << 61).zeros(8) }, "cannot fit"},
	{"array count past end", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(Uint32).mark().u64(3).u32(1).u32(2) }, "cannot fit"},
	{"string array count", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(String).mark().u64(1 << 40).zeros(64) }, "cannot fit"},
	{"string array count by 8", func(w *fb) {
		// 3 strings need at least 24 bytes; 23 are left.
		w.head(0, 1).str("k").typ(ArrayType).typ(String).mark().u64(3).zeros(23)
	}, "cannot fit"},
	{"string in array too long", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(String).u64(2).str("a").mark().u64(1 << 40) }, "exceeds"},
	{"nested array count", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(ArrayType).mark().u64(1 << 59).zeros(24) }, "cannot fit"},
	{"nested deeper than MaxDepth", func(w *fb) {
		w.head(0, 1).str("k").typ(ArrayType)
		for range MaxDepth {
			w.typ(ArrayType).u64(1)
		}
		w.mark().typ(Uint8).u64(0)
	}, "nested deeper"},
	{"nesting bomb", func(w *fb) {
		w.head(0, 1).str("k").typ(ArrayType)
		for range MaxDepth {
			w.typ(ArrayType).u64(1)
		}
		w.mark()
		for range 10000 {
			w.typ(ArrayType).u64(1)
		}
	}, "nested deeper"},
	{"bool array byte", func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(Bool).u64(3).u8(1).mark().u8(7).u8(0) }, "bool byte"},
	{"alignment 0", func(w *fb) { w.head(0, 1).alignment(Uint32, 0) }, "power of two"},
	{"alignment 3", func(w *fb) { w.head(0, 1).alignment(Uint32, 3) }, "power of two"},
	{"alignment 48", func(w *fb) { w.head(0, 1).alignment(Uint64, 48) }, "power of two"},
	{"alignment 2^31", func(w *fb) { w.head(0, 1).alignment(Uint32, 1<<31) }, "power of two"},
	{"alignment negative", func(w *fb) { w.head(0, 1).alignment(Int32, uint64(0xffffffe0)) }, "power of two"},
	{"alignment above int64", func(w *fb) { w.head(0, 1).alignment(Uint64, 1<<63) }, "power of two"},
	{"alignment float", func(w *fb) { w.head(0, 1).alignment(Float32, 0x42000000) }, "FLOAT32"},
	{"alignment string", func(w *fb) { w.head(0, 1).alignment(String, 0) }, "STRING"},
	{"tensor name past end", func(w *fb) { w.head(1, 0).mark().u64(1 << 62).zeros(16) }, "exceeds"},
	{"five dims", func(w *fb) { w.head(1, 0).info("t", []uint64{1, 1, 1, 1, 1}, f32, 0, "dims").data(4) }, "dimensions"},
	{"n_dims max", func(w *fb) { w.head(1, 0).str("t").mark().u32(1<<32 - 1).zeros(64) }, "dimensions"},
	{"dim 0", func(w *fb) { w.head(1, 0).info("t", []uint64{4, 0}, f32, 0, "dim").data(16) }, "ne[1] = 0"},
	{"dim above int64", func(w *fb) { w.head(1, 0).info("t", []uint64{1 << 63}, f32, 0, "dim").data(4) }, "ne[0]"},
	{"element count overflows", func(w *fb) { w.head(1, 0).info("t", []uint64{1 << 32, 1 << 32}, f32, 0, "dims").data(4) }, "overflow"},
	{"element count overflows int64", func(w *fb) {
		w.head(1, 0).info("t", []uint64{1 << 31, 1 << 31, 1 << 31, 1 << 31}, f32, 0, "dims").data(4)
	}, "overflow"},
	{"byte size overflows", func(w *fb) { w.head(1, 0).info("t", []uint64{1 << 61}, f64, 0, "dims").data(8) }, "overflow"},
	{"dims claim more than the file", func(w *fb) { w.head(1, 0).info("t", []uint64{1024, 1024}, f32, 0, "offset").data(64) }, "past the end"},
	{"row not whole blocks", func(w *fb) { w.head(1, 0).info("t", []uint64{16, 2}, q8, 0, "ne0").data(34) }, "whole number"},
	{"quantized scalar", func(w *fb) { w.head(1, 0).info("t", nil, q8, 0, "dims").data(34) }, "whole number"},
	{"offset unaligned", func(w *fb) { w.head(1, 0).info("t", []uint64{4}, f32, 4, "offset").data(64) }, "multiple of the alignment"},
	{"offset past end", func(w *fb) { w.head(1, 0).info("t", []uint64{4}, f32, 1<<40, "offset").data(64) }, "past the end"},
	{"offset near 2^64", func(w *fb) { w.head(1, 0).info("t", []uint64{4}, f32, 1<<64-32, "offset").data(64) }, "past the end"},
	{"offset at end", func(w *fb) { w.head(1, 0).info("t", []uint64{4}, f32, 32, "offset").data(32) }, "past the end"},
	{"no data section", func(w *fb) { w.head(1, 0).info("t", []uint64{1}, f32, 0, "offset") }, "past the end"},
	{"offset aligned to 32, not 64", func(w *fb) {
		w.head(1, 1).alignment(Uint32, 64).info("t", []uint64{4}, f32, 32, "offset").data(128)
	}, "multiple of the alignment"},
	{"duplicate tensor name", func(w *fb) {
		w.head(2, 0).info("t", []uint64{8}, f32, 0, "").info("t", []uint64{8}, f32, 32, "name").data(64)
	}, "duplicate tensor"},
	{"tensors overlap", func(w *fb) {
		w.head(2, 0).info("a", []uint64{16}, f32, 0, "").info("b", []uint64{8}, f32, 32, "offset").data(96)
	}, "overlaps"},
	{"tensors at the same offset", func(w *fb) {
		w.head(2, 0).info("a", []uint64{8}, f32, 0, "").info("b", []uint64{8}, f32, 0, "offset").data(64)
	}, "overlaps"},
	{"overlap out of order", func(w *fb) {
		w.head(3, 0).info("c", []uint64{8}, f32, 64, "offset").info("a", []uint64{24}, f32, 0, "").info("b", []uint64{8}, f32, 96, "").data(128)
	}, "overlaps"},
}

func (c hostileCase) bytes() ([]byte, int64) {
	w := &fb{}
	c.build(w)
	return w.b, w.at
}

func TestHostile(t *testing.T) {
	for _, c := range hostileCases {
		t.Run(c.name, func(t *testing.T) {
			data, at := c.bytes()
			f, err := Parse(data)
			var ce *tensor.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v (%v), want *tensor.CorruptError", err, f)
			}
			if ce.Offset != at || ce.Format != "gguf" || !strings.Contains(ce.Reason, c.reason) {
				t.Errorf("got %v; want offset %d, reason containing %q", err, at, c.reason)
			}
			if errcode.Of(err) != errcode.ModelCorrupt {
				t.Errorf("code %q", errcode.Of(err))
			}
		})
	}
}

// The builders make valid files when the fault is left out, so the hostile
// cases fail for the reason they name and no other.
func TestHostileBuilderSane(t *testing.T) {
	valid := map[string]func(w *fb){
		"one tensor":       func(w *fb) { w.head(1, 0).info("t", []uint64{4}, f32, 0, "").data(16) },
		"deepest array":    nestedFile(MaxDepth),
		"alignment 64":     func(w *fb) { w.head(1, 1).alignment(Uint32, 64).info("t", []uint64{4}, f32, 64, "").data(128) },
		"alignment int8 1": func(w *fb) { w.head(1, 1).alignment(Int8, 1).info("t", []uint64{4}, f32, 4, "").data(32) },
		"adjacent tensors": func(w *fb) {
			w.head(2, 0).info("a", []uint64{8}, f32, 0, "").info("b", []uint64{8}, f32, 32, "").data(64)
		},
		"out of order": func(w *fb) {
			w.head(2, 0).info("b", []uint64{8}, f32, 32, "").info("a", []uint64{8}, f32, 0, "").data(64)
		},
		"three out of order": func(w *fb) {
			w.head(3, 0).info("c", []uint64{8}, f32, 96, "").info("a", []uint64{24}, f32, 0, "").info("b", []uint64{8}, f32, 128, "").data(160)
		},
		"scalar f32":         func(w *fb) { w.head(1, 0).info("s", nil, f32, 0, "").data(4) },
		"4 dims":             func(w *fb) { w.head(1, 0).info("t", []uint64{2, 1, 1, 2}, f32, 0, "").data(16) },
		"whole q8 row":       func(w *fb) { w.head(1, 0).info("t", []uint64{32, 2}, q8, 0, "").data(68) },
		"large f64":          func(w *fb) { w.head(1, 0).info("t", []uint64{8}, f64, 0, "").data(64) },
		"string array exact": func(w *fb) { w.head(0, 1).str("k").typ(ArrayType).typ(String).u64(3).zeros(24) },
		"counts just fit":    func(w *fb) { w.head(1, 1).kvU8("", 0).info("", nil, f32, 0, "").data(4) },
	}
	for name, build := range valid {
		w := &fb{}
		build(w)
		if _, err := Parse(w.b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func nestedFile(depth int) func(w *fb) {
	return func(w *fb) {
		w.head(0, 1).str("k").typ(ArrayType)
		for range depth - 1 {
			w.typ(ArrayType).u64(1)
		}
		w.typ(Uint8).u64(1).u8(5)
	}
}

func TestUnsupportedTypes(t *testing.T) {
	for id, want := range map[uint32]string{16: "IQ2_XXS", 21: "IQ3_S", 39: "MXFP4", 4: "ggml type 4 (unknown)", 99: "ggml type 99 (unknown)"} {
		w := (&fb{}).head(2, 0).info("ok", []uint64{4}, f32, 0, "").info("blk.0.w", []uint64{256}, id, 32, "").data(1024)
		_, err := Parse(w.b)
		var ue *tensor.UnsupportedDTypeError
		if !errors.As(err, &ue) || ue.Tensor != "blk.0.w" || !strings.Contains(ue.DType, want) || ue.Format != "gguf" {
			t.Errorf("type %d: %v, want *tensor.UnsupportedDTypeError naming blk.0.w and %s", id, err, want)
		}
		if errcode.Of(err) != errcode.LoadFailed {
			t.Errorf("type %d: code %q", id, errcode.Of(err))
		}
	}
}

func TestVersions(t *testing.T) {
	for _, c := range []struct {
		version   uint32
		bigEndian bool
	}{{0, false}, {1, false}, {4, false}, {1<<32 - 1, false}, {0x02000000, true}, {0x03000000, true}} {
		data := (&fb{}).raw(Magic).u32(c.version).u64(0).u64(0).b
		_, err := Parse(data)
		var ve *VersionError
		if !errors.As(err, &ve) || ve.Version != c.version || ve.BigEndian != c.bigEndian || errcode.Of(err) != errcode.ABIMismatch {
			t.Errorf("version %#x: %v", c.version, err)
		}
	}
	for _, v := range []uint32{2, 3} {
		if f, err := Parse((&fb{}).raw(Magic).u32(v).u64(0).u64(0).b); err != nil || f.Version != v {
			t.Errorf("version %d: %v", v, err)
		}
	}
}
