package gguf

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

// sampleKV has every value type, arrays of every element type, empty
// arrays and nested arrays.
func sampleKV() []KV {
	return []KV{
		{"general.architecture", Value{String, "llama"}},
		{"a.u8", Value{Uint8, uint8(7)}}, {"a.i8", Value{Int8, int8(-7)}},
		{"a.u16", Value{Uint16, uint16(700)}}, {"a.i16", Value{Int16, int16(-700)}},
		{"a.u32", Value{Uint32, uint32(70000)}}, {"a.i32", Value{Int32, int32(-70000)}},
		{"a.f32", Value{Float32, float32(0.25)}}, {"a.bool", Value{Bool, true}},
		{"a.u64", Value{Uint64, uint64(1 << 63)}}, {"a.i64", Value{Int64, int64(-1 << 40)}},
		{"a.f64", Value{Float64, 1e-300}}, {"a.str", Value{String, "ünï"}}, {"a.empty", Value{String, ""}},
		{"a.u8s", Value{ArrayType, Array{Uint8, []uint8{1, 255}}}},
		{"a.i8s", Value{ArrayType, Array{Int8, []int8{-128, 127}}}},
		{"a.u16s", Value{ArrayType, Array{Uint16, []uint16{65535}}}},
		{"a.i16s", Value{ArrayType, Array{Int16, []int16{-32768}}}},
		{"a.u32s", Value{ArrayType, Array{Uint32, []uint32{1 << 31}}}},
		{"a.i32s", Value{ArrayType, Array{Int32, []int32{1, -2}}}},
		{"a.f32s", Value{ArrayType, Array{Float32, []float32{0.5, float32(math.Inf(-1))}}}},
		{"a.bools", Value{ArrayType, Array{Bool, []bool{true, false}}}},
		{"a.strs", Value{ArrayType, Array{String, []string{"x", "", "yz"}}}},
		{"a.u64s", Value{ArrayType, Array{Uint64, []uint64{math.MaxUint64}}}},
		{"a.i64s", Value{ArrayType, Array{Int64, []int64{math.MinInt64}}}},
		{"a.f64s", Value{ArrayType, Array{Float64, []float64{-0.5}}}},
		{"a.none", Value{ArrayType, Array{Uint8, []uint8{}}}},
		{"a.nostrs", Value{ArrayType, Array{String, []string{}}}},
		{"a.nested", Value{ArrayType, Array{ArrayType, []Array{
			{Uint8, []uint8{1, 2}}, {String, []string{"s"}}, {ArrayType, []Array{{Float64, []float64{2}}}}, {Int32, []int32{}},
		}}}},
		{"a.nonested", Value{ArrayType, Array{ArrayType, []Array{}}}},
		{"a.deepest", Value{ArrayType, nestedArray(MaxDepth)}},
	}
}

// nestedArray is depth arrays nested in one another, the innermost holding
// one uint8.
func nestedArray(depth int) Array {
	a := Array{Uint8, []uint8{9}}
	for range depth - 1 {
		a = Array{ArrayType, []Array{a}}
	}
	return a
}

// allDTypeTensors has one tensor of every DType GGUF holds, with random
// bytes and shapes of 0 to 4 dimensions.
func allDTypeTensors(rng *rand.Rand) []tensor.Tensor {
	var ids []int
	for id := range ggmlTypes {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	shapes := [][]int64{{3}, {2, 1}, {1, 2, 1}, {2, 1, 1, 1}, {}}
	var ts []tensor.Tensor
	for i, id := range ids {
		dt := ggmlTypes[uint32(id)]
		shape := append([]int64{}, shapes[i%len(shapes)]...) // non-nil, as Parse returns
		if len(shape) == 0 && dt.BlockSize() > 1 {
			shape = []int64{1}
		}
		if len(shape) > 0 {
			shape[len(shape)-1] *= int64(dt.BlockSize())
		}
		n, _ := tensor.NumElements(shape)
		size, _ := dt.Bytes(n)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		ts = append(ts, tensor.Tensor{Name: "t." + dt.String(), DType: dt, Shape: shape, Data: data})
	}
	return ts
}

func encode(t testing.TB, kv []KV, ts []tensor.Tensor, version uint32) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, kv, ts, &WriteOptions{Version: version}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sameTensors(t *testing.T, got, want []tensor.Tensor) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d tensors, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("tensor %d: got %s %v %v (%d bytes), want %s %v %v (%d bytes)",
				i, g.Name, g.DType, g.Shape, len(g.Data), w.Name, w.DType, w.Shape, len(w.Data))
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		for _, align := range []uint32{0, 1, 64, 4096} {
			kv := sampleKV()
			if align != 0 {
				kv = append(kv, KV{"general.alignment", Value{Uint32, align}})
			}
			ts := allDTypeTensors(rand.New(rand.NewPCG(uint64(version), uint64(align))))
			data := encode(t, kv, ts, version)
			f, err := Parse(data)
			if err != nil {
				t.Fatalf("v%d align %d: %v", version, align, err)
			}
			wantAlign := int(align)
			if align == 0 {
				wantAlign = DefaultAlignment
			}
			if f.Version != version || f.Alignment != wantAlign || f.DataOffset%int64(wantAlign) != 0 {
				t.Errorf("v%d align %d: got version %d alignment %d data offset %d", version, align, f.Version, f.Alignment, f.DataOffset)
			}
			if !reflect.DeepEqual(f.KV, kv) {
				t.Errorf("v%d align %d: metadata differs:\n got %#v\nwant %#v", version, align, f.KV, kv)
			}
			sameTensors(t, f.Tensors(), ts)
			for i, ti := range f.TensorInfos() {
				shape := ts[i].Shape
				if len(ti.NE) != len(shape) {
					t.Fatalf("%s: ne %v for shape %v", ti.Name, ti.NE, shape)
				}
				for j := range shape {
					if ti.NE[j] != shape[len(shape)-1-j] {
						t.Errorf("%s: ne %v is not shape %v reversed", ti.Name, ti.NE, shape)
					}
				}
				if id, _ := TypeID(ts[i].DType); ti.Type != id || ti.Offset%uint64(wantAlign) != 0 {
					t.Errorf("%s: type %d offset %d", ti.Name, ti.Type, ti.Offset)
				}
			}
			if len(data)%wantAlign != 0 {
				t.Errorf("v%d align %d: file of %d bytes is not padded to the alignment", version, align, len(data))
			}
			// Writing what was read gives the same bytes.
			if again := encode(t, f.KV, f.Tensors(), f.Version); !bytes.Equal(again, data) {
				t.Errorf("v%d align %d: re-encoding differs", version, align)
			}
		}
	}
}

// Floats keep their bits: NaN payloads, -0, infinities.
func TestFloatBits(t *testing.T) {
	nan32 := math.Float32frombits(0x7fc01234)
	nan64 := math.Float64frombits(0xfff8000000000abc)
	kv := []KV{
		{"f32", Value{Float32, nan32}}, {"f64", Value{Float64, nan64}},
		{"neg0", Value{Float64, math.Copysign(0, -1)}},
		{"f32s", Value{ArrayType, Array{Float32, []float32{nan32, float32(math.Inf(1))}}}},
	}
	f, err := Parse(encode(t, kv, nil, 3))
	if err != nil {
		t.Fatal(err)
	}
	get := func(k string) any { v, _ := f.Get(k); return v.V }
	if b := math.Float32bits(get("f32").(float32)); b != 0x7fc01234 {
		t.Errorf("f32 bits %#x", b)
	}
	if b := math.Float64bits(get("f64").(float64)); b != 0xfff8000000000abc {
		t.Errorf("f64 bits %#x", b)
	}
	if b := math.Float64bits(get("neg0").(float64)); b != 1<<63 {
		t.Errorf("-0 bits %#x", b)
	}
	if s, _ := f.Float32s("f32s"); len(s) != 2 || math.Float32bits(s[0]) != 0x7fc01234 || !math.IsInf(float64(s[1]), 1) {
		t.Errorf("f32s %v", s)
	}
}

func TestNoTensors(t *testing.T) {
	for _, kv := range [][]KV{nil, sampleKV()[:1]} {
		f, err := Parse(encode(t, kv, nil, 3))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Tensors()) != 0 || len(f.KV) != len(kv) {
			t.Errorf("got %d tensors, %d keys", len(f.Tensors()), len(f.KV))
		}
	}
}

func TestGetters(t *testing.T) {
	f, err := Parse(encode(t, sampleKV(), nil, 3))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := f.String("general.architecture"); !ok || s != "llama" {
		t.Errorf("String = %q, %v", s, ok)
	}
	if _, ok := f.String("a.u8"); ok {
		t.Error("String of a UINT8: ok")
	}
	if _, ok := f.String("missing"); ok {
		t.Error("String of a missing key: ok")
	}
	ints := map[string]int64{"a.u8": 7, "a.i8": -7, "a.u16": 700, "a.i16": -700, "a.u32": 70000, "a.i32": -70000, "a.i64": -1 << 40}
	for k, want := range ints {
		if n, ok := f.Int(k); !ok || n != want {
			t.Errorf("Int(%s) = %d, %v; want %d", k, n, ok, want)
		}
	}
	for _, k := range []string{"a.u64", "a.f32", "a.str", "a.bool", "a.i32s", "missing"} {
		if n, ok := f.Int(k); ok {
			t.Errorf("Int(%s) = %d, ok", k, n)
		}
	}
	floats := map[string]float64{"a.f32": 0.25, "a.f64": 1e-300, "a.i16": -700, "a.u64": 1 << 63}
	for k, want := range floats {
		if x, ok := f.Float(k); !ok || x != want {
			t.Errorf("Float(%s) = %v, %v; want %v", k, x, ok, want)
		}
	}
	if _, ok := f.Float("a.str"); ok {
		t.Error("Float of a string: ok")
	}
	if b, ok := f.Bool("a.bool"); !ok || !b {
		t.Errorf("Bool = %v, %v", b, ok)
	}
	if _, ok := f.Bool("a.u8"); ok {
		t.Error("Bool of a UINT8: ok")
	}
	if s, ok := f.Strings("a.strs"); !ok || !reflect.DeepEqual(s, []string{"x", "", "yz"}) {
		t.Errorf("Strings = %q, %v", s, ok)
	}
	if _, ok := f.Strings("a.i32s"); ok {
		t.Error("Strings of an INT32 array: ok")
	}
	int32s := map[string][]int32{"a.i32s": {1, -2}, "a.u8s": {1, 255}, "a.i8s": {-128, 127}, "a.u16s": {65535}, "a.i16s": {-32768}, "a.none": {}}
	for k, want := range int32s {
		if v, ok := f.Int32s(k); !ok || !reflect.DeepEqual(v, want) {
			t.Errorf("Int32s(%s) = %v, %v; want %v", k, v, ok, want)
		}
	}
	// Values outside int32, and non-integer arrays.
	for _, k := range []string{"a.u32s", "a.u64s", "a.i64s", "a.f32s", "a.strs", "a.nested", "a.u8", "missing"} {
		if v, ok := f.Int32s(k); ok {
			t.Errorf("Int32s(%s) = %v, ok", k, v)
		}
	}
	if v, ok := f.Float32s("a.f64s"); !ok || !reflect.DeepEqual(v, []float32{-0.5}) {
		t.Errorf("Float32s(f64s) = %v, %v", v, ok)
	}
	if v, ok := f.Float32s("a.i32s"); !ok || !reflect.DeepEqual(v, []float32{1, -2}) {
		t.Errorf("Float32s(i32s) = %v, %v", v, ok)
	}
	if _, ok := f.Float32s("a.strs"); ok {
		t.Error("Float32s of strings: ok")
	}
}

func TestFitsInt32(t *testing.T) {
	for _, c := range []struct {
		x  int64
		ok bool
	}{{math.MaxInt32, true}, {math.MaxInt32 + 1, false}, {math.MinInt32, true}, {math.MinInt32 - 1, false}, {0, true}} {
		if _, ok := fitsInt32(c.x); ok != c.ok {
			t.Errorf("fitsInt32(%d) = %v", c.x, ok)
		}
	}
	if _, ok := fitsInt32(uint64(math.MaxUint64)); ok {
		t.Error("fitsInt32(MaxUint64) ok")
	}
	if _, ok := fitsInt32(uint32(math.MaxInt32 + 1)); ok {
		t.Error("fitsInt32(2^31 as uint32) ok")
	}
}

func TestTypeIDs(t *testing.T) {
	// The ids of ggml.h / gguf-py's GGMLQuantizationType.
	want := map[tensor.DType]uint32{
		tensor.F32: 0, tensor.F16: 1, tensor.Q4_0: 2, tensor.Q4_1: 3, tensor.Q5_0: 6, tensor.Q5_1: 7,
		tensor.Q8_0: 8, tensor.Q8_1: 9, tensor.Q2_K: 10, tensor.Q3_K: 11, tensor.Q4_K: 12, tensor.Q5_K: 13,
		tensor.Q6_K: 14, tensor.Q8_K: 15, tensor.I8: 24, tensor.I16: 25, tensor.I32: 26, tensor.I64: 27,
		tensor.F64: 28, tensor.BF16: 30, tensor.IQ4_NL: 20, tensor.IQ4_XS: 23,
	}
	for dt, id := range want {
		if got, ok := TypeID(dt); !ok || got != id {
			t.Errorf("TypeID(%v) = %d, %v; want %d", dt, got, ok, id)
		}
		if got, ok := TypeOf(id); !ok || got != dt {
			t.Errorf("TypeOf(%d) = %v, %v; want %v", id, got, ok, dt)
		}
	}
	for _, dt := range []tensor.DType{tensor.U8, tensor.Bool, tensor.Invalid} {
		if id, ok := TypeID(dt); ok {
			t.Errorf("TypeID(%v) = %d, ok", dt, id)
		}
	}
	for _, id := range []uint32{4, 5, 16, 21, 29, 31, 39, 41, 1000} {
		if dt, ok := TypeOf(id); ok {
			t.Errorf("TypeOf(%d) = %v, ok", id, dt)
		}
	}
	for v := ValueType(0); v < numValueTypes; v++ {
		if p, ok := ParseValueType(v.String()); !ok || p != v {
			t.Errorf("ParseValueType(%q) = %v, %v", v.String(), p, ok)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	okT := tensor.Tensor{Name: "w", DType: tensor.F32, Shape: []int64{2}, Data: make([]byte, 8)}
	cases := map[string]struct {
		kv []KV
		ts []tensor.Tensor
	}{
		"scalar type mismatch":   {kv: []KV{{"k", Value{Uint32, int32(1)}}}},
		"string holds int":       {kv: []KV{{"k", Value{String, 1}}}},
		"unknown value type":     {kv: []KV{{"k", Value{ValueType(13), uint8(1)}}}},
		"array not Array":        {kv: []KV{{"k", Value{ArrayType, []int32{1}}}}},
		"array elem mismatch":    {kv: []KV{{"k", Value{ArrayType, Array{Uint8, []int32{1}}}}}},
		"array nil slice":        {kv: []KV{{"k", Value{ArrayType, Array{Uint8, nil}}}}},
		"nested elem mismatch":   {kv: []KV{{"k", Value{ArrayType, Array{Int32, []Array{}}}}}},
		"nested inner mismatch":  {kv: []KV{{"k", Value{ArrayType, Array{ArrayType, []Array{{String, []bool{}}}}}}}},
		"nested too deep":        {kv: []KV{{"k", Value{ArrayType, nestedArray(MaxDepth + 1)}}}},
		"duplicate key":          {kv: []KV{{"k", Value{Uint8, uint8(1)}}, {"k", Value{Uint8, uint8(1)}}}},
		"key not UTF-8":          {kv: []KV{{"k\xff", Value{Uint8, uint8(1)}}}},
		"alignment 0":            {kv: []KV{{"general.alignment", Value{Uint32, uint32(0)}}}},
		"alignment 24":           {kv: []KV{{"general.alignment", Value{Uint32, uint32(24)}}}},
		"alignment huge":         {kv: []KV{{"general.alignment", Value{Uint64, uint64(1 << 40)}}}},
		"alignment string":       {kv: []KV{{"general.alignment", Value{String, "32"}}}},
		"duplicate tensor":       {ts: []tensor.Tensor{okT, okT}},
		"five dims":              {ts: []tensor.Tensor{{Name: "t", DType: tensor.F32, Shape: []int64{1, 1, 1, 1, 2}, Data: make([]byte, 8)}}},
		"zero dim":               {ts: []tensor.Tensor{{Name: "t", DType: tensor.F32, Shape: []int64{0, 2}, Data: nil}}},
		"negative dim":           {ts: []tensor.Tensor{{Name: "t", DType: tensor.F32, Shape: []int64{-1, 2}, Data: nil}}},
		"short data":             {ts: []tensor.Tensor{{Name: "t", DType: tensor.F32, Shape: []int64{3}, Data: make([]byte, 8)}}},
		"row not whole blocks":   {ts: []tensor.Tensor{{Name: "t", DType: tensor.Q8_0, Shape: []int64{2, 16}, Data: make([]byte, 34)}}},
		"scalar quantized":       {ts: []tensor.Tensor{{Name: "t", DType: tensor.Q8_0, Shape: []int64{}, Data: make([]byte, 34)}}},
		"overflowing shape":      {ts: []tensor.Tensor{{Name: "t", DType: tensor.F32, Shape: []int64{1 << 40, 1 << 40}}}},
		"unsupported dtype (U8)": {ts: []tensor.Tensor{{Name: "t", DType: tensor.U8, Shape: []int64{1}, Data: []byte{1}}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, c.kv, c.ts, nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) && !errors.As(err, new(*tensor.UnsupportedDTypeError)) {
				t.Errorf("error %v is neither ErrInvalid nor *tensor.UnsupportedDTypeError", err)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written before the error", buf.Len())
			}
		})
	}
	for _, v := range []uint32{1, 4} {
		err := Write(&bytes.Buffer{}, nil, nil, &WriteOptions{Version: v})
		if errcode.Of(err) != errcode.ABIMismatch {
			t.Errorf("version %d: %v", v, err)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	ts := allDTypeTensors(rand.New(rand.NewPCG(1, 2)))
	full := len(encode(t, sampleKV(), ts, 3))
	for _, n := range []int{0, 100, full - 1} {
		if err := Write(&failWriter{n: n}, sampleKV(), ts, nil); err == nil {
			t.Errorf("writer failing after %d bytes: no error", n)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	ts := allDTypeTensors(rand.New(rand.NewPCG(3, 4)))
	path := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(path, encode(t, sampleKV(), ts, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, f.Tensors(), ts)
	if got, ok := f.Tensor(ts[2].Name); !ok || !bytes.Equal(got.Data, ts[2].Data) {
		t.Errorf("Tensor(%q) = %v", ts[2].Name, ok)
	}
	if _, ok := f.Tensor("absent"); ok {
		t.Error("Tensor(absent) ok")
	}
	var src tensor.Source = f
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Tensor(ts[2].Name); ok || len(f.Tensors()) != 0 {
		t.Error("tensors still listed after Close")
	}
	if s, ok := f.String("general.architecture"); !ok || s != "llama" {
		t.Error("metadata lost after Close")
	}

	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(bad)
	var ce *tensor.CorruptError
	if !errors.As(err, &ce) || ce.Path != bad || ce.Offset != 8 {
		t.Errorf("truncated file: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.gguf")); errcode.Of(err) != errcode.LoadFailed || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty); !errors.As(err, &ce) {
		t.Errorf("empty file: %v", err)
	}
}

// Every prefix of a valid file fails with a typed error until the last
// tensor's data is complete (the final padding is optional).
func TestTruncated(t *testing.T) {
	ts := allDTypeTensors(rand.New(rand.NewPCG(5, 6)))
	data := encode(t, sampleKV(), ts, 3)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var end int64
	for _, ti := range f.TensorInfos() {
		tt, _ := f.Tensor(ti.Name)
		end = max(end, f.DataOffset+int64(ti.Offset)+int64(len(tt.Data)))
	}
	for n := range len(data) {
		_, err := Parse(data[:n:n])
		if int64(n) < end {
			var ce *tensor.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("prefix of %d bytes: %v, want *tensor.CorruptError", n, err)
			}
		} else if err != nil {
			t.Fatalf("prefix of %d bytes (data ends at %d): %v", n, end, err)
		}
	}
}

// Flipping bits of any one header byte gives a file that parses or a typed
// error, never a panic or an untyped error.
func TestByteFlips(t *testing.T) {
	ts := allDTypeTensors(rand.New(rand.NewPCG(7, 8)))
	data := encode(t, sampleKV(), ts, 3)
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(data))
	for i := range int(f.DataOffset) {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			copy(buf, data)
			buf[i] ^= x
			_, err := Parse(buf)
			checkTyped(t, err)
		}
	}
}

// checkTyped fails unless err is nil or one of the reader's typed errors,
// a CorruptError carrying an offset.
func checkTyped(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ce *tensor.CorruptError
	var ue *tensor.UnsupportedDTypeError
	var ve *VersionError
	if !errors.As(err, &ce) && !errors.As(err, &ue) && !errors.As(err, &ve) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	if ce != nil && (ce.Offset < 0 || ce.Format != "gguf") {
		t.Fatalf("corrupt error without an offset: %v", err)
	}
}
