package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

func sample() []tensor.Tensor {
	return []tensor.Tensor{
		{Name: "w", DType: tensor.F32, Shape: []int64{2, 3}, Data: bytes.Repeat([]byte{1, 2, 3, 4}, 6)},
		{Name: "b", DType: tensor.BF16, Shape: []int64{3}, Data: []byte{1, 2, 3, 4, 5, 6}},
		{Name: "s", DType: tensor.I64, Shape: []int64{}, Data: []byte{7, 0, 0, 0, 0, 0, 0, 0}},
		{Name: "z", DType: tensor.F16, Shape: []int64{0, 5}, Data: []byte{}},
		{Name: "ü <&>", DType: tensor.Bool, Shape: []int64{1, 1, 2}, Data: []byte{1, 0}},
		{Name: "i8", DType: tensor.I8, Shape: []int64{3}, Data: []byte{0x80, 0x7f, 0}},
		{Name: "i16", DType: tensor.I16, Shape: []int64{1}, Data: []byte{1, 2}},
		{Name: "i32", DType: tensor.I32, Shape: []int64{1}, Data: []byte{1, 2, 3, 4}},
		{Name: "f64", DType: tensor.F64, Shape: []int64{1}, Data: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: "u8", DType: tensor.U8, Shape: []int64{2}, Data: []byte{9, 10}},
	}
}

func encode(tb testing.TB, ts []tensor.Tensor, meta map[string]string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, ts, meta); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func sameTensors(tb testing.TB, got, want []tensor.Tensor) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%d tensors, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.DType != w.DType || !slices.Equal(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			tb.Fatalf("tensor %d: got %q %v %v % x, want %q %v %v % x", i, g.Name, g.DType, g.Shape, g.Data, w.Name, w.DType, w.Shape, w.Data)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, meta := range []map[string]string{nil, {"format": "pt", "ü": "ß", "<&>": "\"\\\n\x00"}} {
		data := encode(t, sample(), meta)
		hl := binary.LittleEndian.Uint64(data)
		if hl%8 != 0 {
			t.Errorf("header length %d not padded to 8", hl)
		}
		hdr := string(data[8 : 8+hl])
		if trimmed := strings.TrimRight(hdr, " "); len(hdr)-len(trimmed) >= 8 || !strings.HasSuffix(trimmed, "}") {
			t.Errorf("header not padded with < 8 spaces: %q", hdr)
		}
		if !json.Valid([]byte(hdr)) {
			t.Errorf("header is not JSON: %s", hdr)
		}
		f, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		sameTensors(t, f.Tensors(), sample())
		if !maps.Equal(f.Metadata(), meta) {
			t.Errorf("metadata %q, want %q", f.Metadata(), meta)
		}
		for _, want := range sample() {
			got, ok := f.Tensor(want.Name)
			if !ok || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("Tensor(%q) = %v, %v", want.Name, got, ok)
			}
		}
		if _, ok := f.Tensor("absent"); ok {
			t.Error("Tensor(absent) found")
		}
		// Data is a view of the input, not a copy: w is the first tensor.
		if w, _ := f.Tensor("w"); &w.Data[0] != &data[8+hl] || cap(w.Data) != len(w.Data) {
			t.Errorf("tensor data is not a capped view of the input")
		}
	}

	path := filepath.Join(t.TempDir(), "m.safetensors")
	meta := map[string]string{"format": "pt"}
	if err := WriteFile(path, sample(), meta); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("WriteFile mode: %v %v", st, err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".safetensors-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	mf, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, mf.Tensors(), sample())
	if !maps.Equal(mf.Metadata(), meta) {
		t.Errorf("metadata %v", mf.Metadata())
	}
	var src tensor.Source = mf
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mf.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestHeaderLayout pins the header Write produces: the Python package's
// field order and no HTML escaping.
func TestHeaderLayout(t *testing.T) {
	data := encode(t, []tensor.Tensor{{Name: "a<b", DType: tensor.F32, Shape: []int64{2}, Data: make([]byte, 8)}}, map[string]string{"k": "v&"})
	want := `{"__metadata__":{"k":"v&"},"a<b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	got := strings.TrimRight(string(data[8:8+binary.LittleEndian.Uint64(data)]), " ")
	if got != want {
		t.Errorf("header\n got %s\nwant %s", got, want)
	}
}

func TestWriteErrors(t *testing.T) {
	f32 := func(name string, n int) tensor.Tensor {
		return tensor.Tensor{Name: name, DType: tensor.F32, Shape: []int64{int64(n)}, Data: make([]byte, 4*n)}
	}
	short := f32("short", 2)
	short.Data = short.Data[:7]
	cases := map[string]struct {
		ts   []tensor.Tensor
		meta map[string]string
		want error
	}{
		"duplicate":     {[]tensor.Tensor{f32("a", 1), f32("a", 1)}, nil, ErrDuplicateName},
		"reserved":      {[]tensor.Tensor{f32("__metadata__", 1)}, nil, ErrReservedName},
		"size":          {[]tensor.Tensor{short}, nil, ErrDataSize},
		"bad utf8 name": {[]tensor.Tensor{f32("a\xff", 1)}, nil, ErrInvalidUTF8},
		"bad utf8 meta": {nil, map[string]string{"k": "\xc3"}, ErrInvalidUTF8},
	}
	for name, c := range cases {
		if err := Write(new(bytes.Buffer), c.ts, c.meta); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	q := tensor.Tensor{Name: "q", DType: tensor.Q8_0, Shape: []int64{32}, Data: make([]byte, 34)}
	if err := Write(new(bytes.Buffer), []tensor.Tensor{q}, nil); !errors.As(err, new(*tensor.UnsupportedDTypeError)) {
		t.Errorf("Q8_0: %v", err)
	}
	// A failed WriteFile leaves neither the file nor a temporary.
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "x.safetensors"), []tensor.Tensor{short}, nil); !errors.Is(err, ErrDataSize) {
		t.Errorf("WriteFile: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

type wantTensor struct {
	DType string
	Shape []int64
	Hex   string
}

func checkWant(t *testing.T, src tensor.Source, want map[string]wantTensor) {
	t.Helper()
	if len(src.Tensors()) != len(want) {
		t.Errorf("%d tensors, want %d", len(src.Tensors()), len(want))
	}
	for name, w := range want {
		got, ok := src.Tensor(name)
		if !ok {
			t.Errorf("missing %s", name)
			continue
		}
		data, err := hex.DecodeString(w.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if got.DType.String() != w.DType || !slices.Equal(got.Shape, w.Shape) || !bytes.Equal(got.Data, data) {
			t.Errorf("%s: %v %v % x, want %s %v % x", name, got.DType, got.Shape, got.Data, w.DType, w.Shape, data)
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatal(err)
	}
}

// TestPythonFile reads a file written by the Python safetensors package
// (tools/make_safetensors_vectors.py) and writes it back identically.
func TestPythonFile(t *testing.T) {
	f, err := Open("../../testdata/safetensors/python.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want struct {
		Metadata map[string]string
		Order    []string
		Tensors  map[string]wantTensor
	}
	readJSON(t, "../../testdata/safetensors/python.json", &want)
	checkWant(t, f, want.Tensors)
	var order []string
	for _, tt := range f.Tensors() {
		order = append(order, tt.Name)
	}
	if !slices.Equal(order, want.Order) {
		t.Errorf("order %v, want %v", order, want.Order)
	}
	if !maps.Equal(f.Metadata(), want.Metadata) {
		t.Errorf("metadata %q, want %q", f.Metadata(), want.Metadata)
	}
	// Written back in the same order, the data section is byte-identical.
	raw, _ := os.ReadFile("../../testdata/safetensors/python.safetensors")
	back := encode(t, f.Tensors(), f.Metadata())
	if !bytes.Equal(back[8+binary.LittleEndian.Uint64(back):], raw[8+binary.LittleEndian.Uint64(raw):]) {
		t.Error("data section written back differs from Python's")
	}
}

func TestPythonSharded(t *testing.T) {
	s, err := OpenIndex("../../testdata/safetensors/sharded/model.safetensors.index.json")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want struct {
		IndexMetadata map[string]string `json:"index_metadata"`
		Tensors       map[string]wantTensor
	}
	readJSON(t, "../../testdata/safetensors/sharded.json", &want)
	checkWant(t, s, want.Tensors)
	if !maps.Equal(s.Metadata(), want.IndexMetadata) {
		t.Errorf("metadata %q, want %q", s.Metadata(), want.IndexMetadata)
	}
	if len(s.Paths()) != 2 {
		t.Errorf("paths %v", s.Paths())
	}
}

func TestPythonUnsupported(t *testing.T) {
	_, err := Open("../../testdata/safetensors/unsupported.safetensors")
	var ue *tensor.UnsupportedDTypeError
	if !errors.As(err, &ue) || errcode.Of(err) != errcode.LoadFailed {
		t.Fatalf("got %v, want *tensor.UnsupportedDTypeError", err)
	}
	if ue.DType != "F8_E4M3" && ue.DType != "U16" {
		t.Errorf("dtype %q", ue.DType)
	}
}

// header builds a file from a raw header and data section.
func header(h string, body []byte) []byte {
	out := make([]byte, 8, 8+len(h)+len(body))
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	return append(append(out, h...), body...)
}

type corruptCase struct {
	data   []byte
	offset int64  // want CorruptError.Offset
	reason string // want in CorruptError.Reason
}

// inHeader is a file with header h whose error is at the first occurrence
// of marker in h.
func inHeader(h string, body []byte, marker, reason string) corruptCase {
	i := strings.Index(h, marker)
	if i < 0 {
		panic("marker " + marker + " not in " + h)
	}
	return corruptCase{header(h, body), 8 + int64(i), reason}
}

// inData is a file with header h whose error is at byte k of its data
// section.
func inData(h string, body []byte, k int64, reason string) corruptCase {
	return corruptCase{header(h, body), 8 + int64(len(h)) + k, reason}
}

// u8 is a header entry for a U8 tensor at [b, e).
func u8(name string, b, e int) string {
	return fmt.Sprintf(`"%s":{"dtype":"U8","shape":[%d],"data_offsets":[%d,%d]}`, name, e-b, b, e)
}

// corruptCases are files the reference implementation rejects too (or, for
// duplicate tensor and metadata keys, silently merges), each with the
// file offset the error must point at.
func corruptCases() map[string]corruptCase {
	length := func(n uint64, size int) []byte {
		b := make([]byte, size)
		binary.LittleEndian.PutUint64(b, n)
		return b
	}
	deep := `{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`
	dup := `{` + u8("a", 0, 1) + `,` + u8("a", 0, 1) + `}`
	return map[string]corruptCase{
		"empty":       {nil, 0, "shorter than"},
		"short":       {[]byte{1, 2, 3}, 0, "shorter than"},
		"huge header": {length(MaxHeaderSize+1, 8), 0, "exceeds"},
		"header 2^63": {length(1<<63+5, 16), 0, "exceeds"},
		"header past": {length(100, 12), 0, "past the end"},

		"empty header":     {header(``, nil), 8, "end of JSON"},
		"not json":         {header(`{"a":`, nil), 13, "end of JSON"},
		"not object":       inHeader(`[1,2]`, nil, `[`, "want an object"),
		"trailing":         inHeader(`{} x`, nil, `x`, "after the header"),
		"trailing nul":     inHeader("{}\x00", nil, "\x00", "after the header"),
		"bad utf8":         inHeader("{\"a\xff\":{}}", nil, "\xff", "UTF-8"),
		"duplicate":        inHeader(dup, []byte{1}, `"a"`+u8("a", 0, 1)[3:]+`}`, `duplicate key "a"`),
		"duplicate field":  inHeader(`{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}, `"dtype":"U8","shape"`, `duplicate key "dtype"`),
		"case folded":      inHeader(`{"a":{"DTYPE":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}, `"a"`, "lacks dtype"),
		"missing fields":   inHeader(`{"a":{"dtype":"U8"}}`, nil, `"a"`, "lacks dtype"),
		"entry not object": inHeader(`{"a":[]}`, nil, `[`, "want an object"),
		"dtype not string": inHeader(`{"a":{"dtype":1,"shape":[1],"data_offsets":[0,1]}}`, []byte{1}, `1`, "want a string"),
		"unknown dtype":    inHeader(`{`+u8("x", 0, 1)+`,"a":{"dtype":"XYZ","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}, `"a"`, `unknown dtype "XYZ"`),
		"shape float":      inHeader(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, []byte{1}, `1.0`, "non-negative integer"),
		"shape null":       inHeader(`{"a":{"dtype":"U8","shape":null,"data_offsets":[0,1]}}`, []byte{1}, `null`, "want an array"),
		"negative dim":     inHeader(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil, `-1`, "non-negative integer"),
		"dim 2^63":         inHeader(`{"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}}`, nil, `922`, "below 2^63"),
		"negative offset":  inHeader(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[-1,-1]}}`, nil, `-1`, "non-negative integer"),
		"offsets 3":        inHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, []byte{1}, `[0,1,2]`, "want 2"),
		"offsets string":   inHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":"0,1"}}`, []byte{1}, `"0,1"`, "want an array"),
		"overflow":         inHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, make([]byte, 4), `"a"`, "overflows"),
		"overflow bits":    inHeader(`{"a":{"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,8]}}`, make([]byte, 8), `"a"`, "overflows"),
		"size mismatch":    inHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4), `"a"`, "needs 8 bytes"),
		"past end":         inHeader(`{`+u8("a", 0, 8)+`}`, make([]byte, 4), `"a"`, "past the 4-byte data section"),
		"past end huge":    inHeader(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[9223372036854775806,9223372036854775807]}}`, nil, `"a"`, "past the 0-byte"),
		"reversed":         inHeader(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4), `"a"`, "end before"),
		"meta not str":     inHeader(`{"__metadata__":{"a":1}}`, nil, `1`, "want a string"),
		"meta not obj":     inHeader(`{"__metadata__":[]}`, nil, `[`, "want an object"),
		"meta duplicate":   inHeader(`{"__metadata__":{"a":"1","a":"2"}}`, nil, `"a":"2"`, `duplicate key "a"`),
		"deep":             inHeader(deep, nil, `[[`, "invalid JSON"),
		"deep entry":       inHeader(`{"a":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}`, nil, `[`, "want an object"),

		"overlap":         inData(`{`+u8("a", 0, 4)+`,`+u8("b", 2, 4)+`}`, make([]byte, 4), 2, `"b"`),
		"empty in middle": inData(`{`+u8("a", 0, 4)+`,`+u8("b", 2, 2)+`}`, make([]byte, 4), 2, "overlaps"),
		"same range":      inData(`{`+u8("a", 0, 4)+`,`+u8("b", 0, 4)+`}`, make([]byte, 4), 0, "overlaps"),
		"hole":            inData(`{`+u8("a", 2, 4)+`}`, make([]byte, 4), 0, "bytes [0, 2)"),
		"inner hole":      inData(`{`+u8("a", 0, 1)+`,`+u8("b", 3, 4)+`}`, make([]byte, 4), 1, "bytes [1, 3)"),
		"tail":            inData(`{`+u8("a", 0, 2)+`}`, make([]byte, 4), 2, "2 bytes after"),
		"no tensors tail": inData(`{}`, []byte{1}, 0, "1 bytes after"),
	}
}

func TestCorrupt(t *testing.T) {
	for name, c := range corruptCases() {
		t.Run(name, func(t *testing.T) {
			f, err := Parse(c.data)
			var ce *tensor.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, %v; want *tensor.CorruptError", f, err)
			}
			if errcode.Of(err) != errcode.ModelCorrupt {
				t.Errorf("code %s", errcode.Of(err))
			}
			if ce.Offset != c.offset || !strings.Contains(ce.Reason, c.reason) {
				t.Errorf("got %v\nwant offset %d, reason containing %q", err, c.offset, c.reason)
			}
		})
	}
}

// TestAccepted are edge cases the reference implementation accepts.
func TestAccepted(t *testing.T) {
	cases := map[string]struct {
		data  []byte
		names []string
	}{
		"null metadata":    {header(`{"__metadata__":null}`, nil), nil},
		"unknown field":    {header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":{"y":[1]}}}`, []byte{1}), []string{"a"}},
		"leading space":    {header(` {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), []string{"a"}},
		"empty at end":     {header(`{"b":{"dtype":"U8","shape":[0],"data_offsets":[1,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), []string{"a", "b"}},
		"empty name":       {header(`{"":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), []string{""}},
		"escaped name":     {header(`{"\u0061\n":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), []string{"a\n"}},
		"header not 8":     {header(`{}`, nil), nil},
		"metadata tensors": {header(`{"__metadata__":{"dtype":"U8"}}`, nil), nil},
	}
	for name, c := range cases {
		f, err := Parse(c.data)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var names []string
		for _, tt := range f.Tensors() {
			names = append(names, tt.Name)
		}
		if !slices.Equal(names, c.names) {
			t.Errorf("%s: tensors %q, want %q", name, names, c.names)
		}
	}
}

func TestUnsupportedDType(t *testing.T) {
	for _, dt := range []string{"F8_E4M3", "F8_E5M2", "U16", "U32", "U64", "C64", "F8_E8M0"} {
		_, err := Parse(header(`{"a":{"dtype":"`+dt+`","shape":[2],"data_offsets":[0,`+strconv.Itoa(int(formatDTypes[dt].bits/4))+`]}}`, make([]byte, formatDTypes[dt].bits/4)))
		var ue *tensor.UnsupportedDTypeError
		if !errors.As(err, &ue) || ue.DType != dt || ue.Tensor != "a" {
			t.Errorf("%s: %v", dt, err)
		}
	}
	// Sub-byte types are sized in bits: 3 F4 values are not whole bytes.
	if _, err := Parse(header(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, make([]byte, 2))); !errors.As(err, new(*tensor.CorruptError)) {
		t.Errorf("3 × F4: %v", err)
	}
	// A corrupt file with an unsupported dtype is reported as corrupt.
	if _, err := Parse(header(`{"a":{"dtype":"U16","shape":[2],"data_offsets":[0,3]}}`, make([]byte, 3))); !errors.As(err, new(*tensor.CorruptError)) {
		t.Errorf("U16 size mismatch: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "absent.safetensors")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: %v", err)
	}
	empty := filepath.Join(dir, "empty.safetensors")
	os.WriteFile(empty, nil, 0o644)
	var ce *tensor.CorruptError
	if _, err := Open(empty); !errors.As(err, &ce) || ce.Path != empty {
		t.Errorf("empty: %v", err)
	}
}

func TestSharded(t *testing.T) {
	dir := t.TempDir()
	ts := sample()
	const one, two = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	if err := WriteFile(filepath.Join(dir, one), ts[:4], nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, two), ts[4:], nil); err != nil {
		t.Fatal(err)
	}
	wm := map[string]string{}
	for i, tt := range ts {
		wm[tt.Name] = map[bool]string{true: one, false: two}[i < 4]
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	write := func(raw string) string {
		if err := os.WriteFile(index, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		return index
	}
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	s, err := OpenIndex(write(jsonOf(map[string]any{"metadata": map[string]any{"total_size": 16060522496, "format": "pt", "x": []int{1}}, "weight_map": wm})))
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, s.Tensors(), ts)
	for _, want := range ts {
		if got, ok := s.Tensor(want.Name); !ok || !bytes.Equal(got.Data, want.Data) {
			t.Errorf("Tensor(%q) = %v, %v", want.Name, got, ok)
		}
	}
	if want := map[string]string{"total_size": "16060522496", "format": "pt", "x": "[1]"}; !maps.Equal(s.Metadata(), want) {
		t.Errorf("metadata %q, want %q", s.Metadata(), want)
	}
	if !slices.Equal(s.Paths(), []string{filepath.Join(dir, one), filepath.Join(dir, two)}) {
		t.Errorf("paths %v", s.Paths())
	}
	var src tensor.Source = s
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}

	// A tensor a shard holds but the index omits is kept.
	partial := maps.Clone(wm)
	delete(partial, "b")
	if s, err := OpenIndex(write(jsonOf(map[string]any{"weight_map": partial}))); err != nil {
		t.Errorf("unlisted tensor: %v", err)
	} else {
		if _, ok := s.Tensor("b"); !ok {
			t.Error("unlisted tensor b dropped")
		}
		s.Close()
	}

	with := func(k, v string) map[string]string { m := maps.Clone(wm); m[k] = v; return m }
	// A third shard holding "w" again.
	if err := WriteFile(filepath.Join(dir, "extra.safetensors"), ts[:1], nil); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"wrong shard":     jsonOf(map[string]any{"weight_map": with("w", two)}),
		"absent":          jsonOf(map[string]any{"weight_map": with("q", one)}),
		"in two shards":   jsonOf(map[string]any{"weight_map": with("q", "extra.safetensors")}),
		"path escape":     jsonOf(map[string]any{"weight_map": with("w", "../x.safetensors")}),
		"dot dot":         jsonOf(map[string]any{"weight_map": with("w", "..")}),
		"empty map":       `{"weight_map":{}}`,
		"no map":          `{"metadata":{}}`,
		"not json":        `{"weight_map":`,
		"not string":      `{"weight_map":{"w":1}}`,
		"duplicate name":  `{"weight_map":{"w":"` + one + `","w":"` + two + `"}}`,
		"duplicate key":   `{"weight_map":{"w":"` + one + `"},"weight_map":{}}`,
		"trailing":        jsonOf(map[string]any{"weight_map": wm}) + `x`,
		"bad utf8":        "{\"weight_map\":{\"w\xff\":\"" + one + "\"}}",
		"metadata is arr": `{"metadata":[],"weight_map":{"w":"` + one + `"}}`,
	}
	for name, raw := range bad {
		_, err := OpenIndex(write(raw))
		if !errors.As(err, new(*tensor.CorruptError)) {
			t.Errorf("%s: %v, want *tensor.CorruptError", name, err)
		}
	}
	// A corrupt shard is reported with the shard's path.
	os.WriteFile(filepath.Join(dir, two), []byte("nonsense"), 0o644)
	var ce *tensor.CorruptError
	if _, err := OpenIndex(write(jsonOf(map[string]any{"weight_map": wm}))); !errors.As(err, &ce) || ce.Path != filepath.Join(dir, two) {
		t.Errorf("corrupt shard: %v", err)
	}
	if _, err := OpenIndex(filepath.Join(dir, "absent.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent index: %v", err)
	}
}
