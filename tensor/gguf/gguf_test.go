package gguf

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

func sampleKV() []KV {
	return []KV{
		{"general.architecture", Value{String, "llama"}},
		{"general.alignment", Value{Uint32, uint32(64)}},
		{"a.u8", Value{Uint8, uint8(7)}}, {"a.i8", Value{Int8, int8(-7)}},
		{"a.u16", Value{Uint16, uint16(700)}}, {"a.i16", Value{Int16, int16(-700)}},
		{"a.u32", Value{Uint32, uint32(70000)}}, {"a.i32", Value{Int32, int32(-70000)}},
		{"a.f32", Value{Float32, float32(0.25)}}, {"a.bool", Value{Bool, true}},
		{"a.u64", Value{Uint64, uint64(1 << 63)}}, {"a.i64", Value{Int64, int64(-1 << 40)}},
		{"a.f64", Value{Float64, 1e-300}}, {"a.str", Value{String, "ünï"}},
		{"a.strs", Value{ArrayType, Array{String, []string{"x", "", "yz"}}}},
		{"a.i32s", Value{ArrayType, Array{Int32, []int32{1, -2}}}},
		{"a.f32s", Value{ArrayType, Array{Float32, []float32{0.5}}}},
		{"a.bools", Value{ArrayType, Array{Bool, []bool{true, false}}}},
		{"a.nested", Value{ArrayType, Array{ArrayType, []Array{{Uint8, []uint8{1, 2}}, {String, []string{"s"}}}}}},
	}
}

func sampleTensors() []tensor.Tensor {
	q := make([]byte, 2*34) // two Q8_0 blocks
	for i := range q {
		q[i] = byte(i)
	}
	return []tensor.Tensor{
		{Name: "w", DType: tensor.F32, Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{0, 0, 128, 63}, 6)},
		{Name: "q", DType: tensor.Q8_0, Shape: []int64{1, 64}, Data: q},
		{Name: "b", DType: tensor.BF16, Shape: []int64{5}, Data: make([]byte, 10)},
	}
}

func encode(t testing.TB, kv []KV, ts []tensor.Tensor, version uint32) []byte {
	var buf bytes.Buffer
	if err := Write(&buf, kv, ts, &WriteOptions{Version: version}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, v := range []uint32{2, 3} {
		f, err := Parse(encode(t, sampleKV(), sampleTensors(), v))
		if err != nil {
			t.Fatal(err)
		}
		if f.Version != v || f.Alignment != 64 || !reflect.DeepEqual(f.KV, sampleKV()) {
			t.Fatalf("v%d: header/kv differ: %+v", v, f.KV)
		}
		for i, want := range sampleTensors() {
			got := f.Tensors()[i]
			if got.Name != want.Name || got.DType != want.DType || !reflect.DeepEqual(got.Shape, want.Shape) || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("tensor %d: %v %v %v", i, got.Name, got.DType, got.Shape)
			}
			if off := f.TensorInfos()[i].Offset; off%64 != 0 {
				t.Errorf("offset %d not aligned", off)
			}
		}
		if ne := f.TensorInfos()[0].NE; !reflect.DeepEqual(ne, []int64{3, 2}) {
			t.Errorf("ne %v, want [3 2]", ne)
		}
		if s, _ := f.Strings("a.strs"); len(s) != 3 {
			t.Error("Strings")
		}
		if n, ok := f.Int("a.u64"); ok {
			t.Errorf("Int of 2^63 = %d, want not ok", n)
		}
		if n, ok := f.Int("a.i16"); !ok || n != -700 {
			t.Error("Int")
		}
		if x, ok := f.Float("a.f32"); !ok || x != 0.25 {
			t.Error("Float")
		}
		if v, ok := f.Int32s("a.i32s"); !ok || v[1] != -2 {
			t.Error("Int32s")
		}
	}
}

func TestPythonFile(t *testing.T) {
	f, err := Open("../../testdata/gguf/python.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, _ := os.ReadFile("../../testdata/gguf/python.json")
	var want struct {
		KV      map[string]any
		Keys    []string
		Tensors map[string]struct {
			Type uint32
			NE   []int64
			Hex  string
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range f.KV {
		keys = append(keys, kv.Key)
	}
	if !reflect.DeepEqual(keys, want.Keys[3:]) { // the reader's first three are the header
		t.Errorf("keys %v, want %v", keys, want.Keys[3:])
	}
	for k, w := range want.KV {
		v, ok := f.Get(k)
		if !ok {
			t.Fatalf("missing %s", k)
		}
		got := v.V
		if a, isArr := got.(Array); isArr {
			got = a.V
		}
		if u, isU64 := got.(uint64); isU64 { // Python wrote it as a string (JSON numbers lose it)
			got = fmt.Sprint(u)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("%s = %s, want %s", k, gj, wj)
		}
	}
	if nested, _ := f.Get("t.arr_nested"); len(nested.V.(Array).V.([]Array)) != 2 {
		t.Errorf("nested %+v", nested)
	}
	for name, w := range want.Tensors {
		got, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		data, _ := hex.DecodeString(w.Hex)
		ti := f.TensorInfos()[f.byName[name]]
		if ti.Type != w.Type || !reflect.DeepEqual(ti.NE, w.NE) || !bytes.Equal(got.Data, data) {
			t.Errorf("%s: type %d ne %v, want %d %v (data equal %v)", name, ti.Type, ti.NE, w.Type, w.NE, bytes.Equal(got.Data, data))
		}
	}
}

// raw builds a file by hand for hostile cases.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(r, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func head(nT, nKV uint64) *raw {
	r := &raw{}
	r.WriteString("GGUF")
	return r.u32(3).u64(nT).u64(nKV)
}

func hostile() map[string][]byte {
	nested := head(0, 1).str("k").u32(uint32(ArrayType))
	for range 20 {
		nested.u32(uint32(ArrayType)).u64(1)
	}
	nested.u32(uint32(Uint8)).u64(0)
	tensorInfo := func(ne []uint64, typ uint32, off uint64) []byte {
		r := head(1, 0).str("t").u32(uint32(len(ne)))
		for _, d := range ne {
			r.u64(d)
		}
		r.u32(typ).u64(off)
		for r.Len()%32 != 0 {
			r.WriteByte(0)
		}
		r.Write(make([]byte, 64))
		return r.Bytes()
	}
	alignKV := func(v uint32) []byte {
		return head(0, 1).str("general.alignment").u32(uint32(Uint32)).u32(v).Bytes()
	}
	return map[string][]byte{
		"magic":              []byte("GGUX\x03\x00\x00\x00"),
		"short":              []byte("GG"),
		"truncated header":   []byte("GGUF\x03\x00\x00\x00\x01"),
		"kv count too large": head(0, 1<<40).Bytes(),
		"tensor count huge":  head(1<<60, 0).Bytes(),
		"string too long":    head(0, 1).u64(1 << 50).Bytes(),
		"array too long":     head(0, 1).str("k").u32(uint32(ArrayType)).u32(uint32(Uint64)).u64(1 << 61).Bytes(),
		"string array long":  head(0, 1).str("k").u32(uint32(ArrayType)).u32(uint32(String)).u64(1 << 40).Bytes(),
		"deep nesting":       nested.Bytes(),
		"bad value type":     head(0, 1).str("k").u32(99).Bytes(),
		"bad bool":           head(0, 1).str("k").u32(uint32(Bool)).Bytes(),
		"dup key":            head(0, 2).str("k").u32(uint32(Uint8)).WriteByteChain(1).str("k").u32(uint32(Uint8)).WriteByteChain(1).Bytes(),
		"alignment 0":        alignKV(0),
		"alignment 3":        alignKV(3),
		"dims 5":             tensorInfo([]uint64{1, 1, 1, 1, 1}, 0, 0),
		"dims overflow":      tensorInfo([]uint64{1 << 32, 1 << 32}, 0, 0),
		"dim > int64":        tensorInfo([]uint64{1 << 63}, 0, 0),
		"more than file":     tensorInfo([]uint64{1024, 1024}, 0, 0),
		"offset past end":    tensorInfo([]uint64{4}, 0, 1<<40),
		"offset unaligned":   tensorInfo([]uint64{4}, 0, 4),
		"partial block":      tensorInfo([]uint64{16}, 8, 0),
		"offset near max":    tensorInfo([]uint64{4}, 0, ^uint64(0)-31),
	}
}

func (r *raw) WriteByteChain(b byte) *raw { r.WriteByte(b); return r }

func TestHostile(t *testing.T) {
	for name, data := range hostile() {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(data)
			var ce *tensor.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *tensor.CorruptError", err)
			}
		})
	}
	_, err := Parse(head(0, 0).Bytes()[:4:4])
	if err == nil {
		t.Error("magic only: no error")
	}
	v4 := []byte("GGUF\x04\x00\x00\x00")
	if _, err := Parse(v4); errcode.Of(err) != errcode.ABIMismatch {
		t.Errorf("version 4: %v", err)
	}
	iq := head(1, 0).str("t").u32(1).u64(256).u32(16).u64(0).Bytes()
	var ue *tensor.UnsupportedDTypeError
	if _, err := Parse(iq); !errors.As(err, &ue) {
		t.Errorf("IQ2_XXS: %v", err)
	}
}

func TestOverlap(t *testing.T) {
	data := encode(t, nil, sampleTensors()[:1], 3)
	f, _ := Parse(data)
	_ = f
	// Two tensors pointing at the same bytes.
	r := head(2, 0)
	for _, n := range []string{"a", "b"} {
		r.str(n).u32(1).u64(8).u32(0).u64(0)
	}
	for r.Len()%32 != 0 {
		r.WriteByte(0)
	}
	r.Write(make([]byte, 32))
	if _, err := Parse(r.Bytes()); err == nil {
		t.Error("overlapping tensors accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(encode(f, sampleKV(), sampleTensors(), 3))
	f.Add(encode(f, sampleKV()[:3], sampleTensors()[:1], 2))
	if py, err := os.ReadFile("../../testdata/gguf/python.gguf"); err == nil {
		f.Add(py)
	}
	for _, d := range hostile() {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			c := errcode.Of(err)
			if c != errcode.ModelCorrupt && c != errcode.ABIMismatch && !errors.As(err, new(*tensor.UnsupportedDTypeError)) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, g.KV, g.Tensors(), &WriteOptions{Version: g.Version}); err != nil {
			return // e.g. a parsed file whose tensors the writer lays out differently
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parse of written file: %v", err)
		}
		if !reflect.DeepEqual(again.KV, g.KV) || len(again.Tensors()) != len(g.Tensors()) {
			t.Fatal("round trip differs")
		}
	})
}
