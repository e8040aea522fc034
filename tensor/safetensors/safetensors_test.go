package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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
	}
}

func encode(t *testing.T, ts []tensor.Tensor, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, ts, meta); err != nil {
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
		if g.Name != w.Name || g.DType != w.DType || len(g.Shape) != len(w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("tensor %d: got %v %v %v, want %v %v %v", i, g.Name, g.DType, g.Shape, w.Name, w.DType, w.Shape)
		}
		for j := range w.Shape {
			if g.Shape[j] != w.Shape[j] {
				t.Fatalf("tensor %s shape %v, want %v", w.Name, g.Shape, w.Shape)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	meta := map[string]string{"format": "pt", "ü": "ß"}
	data := encode(t, sample(), meta)
	if hl := binary.LittleEndian.Uint64(data); hl%8 != 0 {
		t.Errorf("header length %d not padded to 8", hl)
	}
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, f.Tensors(), sample())
	if f.Metadata()["ü"] != "ß" || len(f.Metadata()) != 2 {
		t.Errorf("metadata %v", f.Metadata())
	}
	if w, ok := f.Tensor("w"); !ok || &w.Data[0] != &data[len(data)-len(w.Data)-6-8] {
		t.Errorf("tensor data is not a view of the input")
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := WriteFile(path, sample(), meta); err != nil {
		t.Fatal(err)
	}
	mf, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	sameTensors(t, mf.Tensors(), sample())
}

// TestPythonFile reads a file written by the Python safetensors package.
func TestPythonFile(t *testing.T) {
	f, err := Open("../../testdata/safetensors/python.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := os.ReadFile("../../testdata/safetensors/python.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Metadata map[string]string
		Tensors  map[string]struct {
			DType string
			Shape []int64
			Hex   string
		}
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors()) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(want.Tensors))
	}
	for name, w := range want.Tensors {
		got, ok := f.Tensor(name)
		if !ok {
			t.Fatalf("missing %s", name)
		}
		data, _ := hex.DecodeString(w.Hex)
		if got.DType.String() != w.DType || !bytes.Equal(got.Data, data) || len(got.Shape) != len(w.Shape) {
			t.Errorf("%s: %v %v, want %s %v", name, got.DType, got.Shape, w.DType, w.Shape)
		}
	}
	for k, v := range want.Metadata {
		if f.Metadata()[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, f.Metadata()[k], v)
		}
	}
}

// header builds a file from a raw header and data section.
func header(h string, body []byte) []byte {
	out := make([]byte, 8, 8+len(h)+len(body))
	binary.LittleEndian.PutUint64(out, uint64(len(h)))
	return append(append(out, h...), body...)
}

func corruptCases() map[string][]byte {
	big := make([]byte, 8)
	binary.LittleEndian.PutUint64(big, MaxHeaderSize+1)
	past := make([]byte, 12)
	binary.LittleEndian.PutUint64(past, 100)
	return map[string][]byte{
		"short":          {1, 2, 3},
		"huge header":    big,
		"header past":    past,
		"not json":       header(`{"a":`, nil),
		"not object":     header(`[1,2]`, nil),
		"trailing":       header(`{} {}`, nil),
		"duplicate":      header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}),
		"size mismatch":  header(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
		"past end":       header(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, make([]byte, 4)),
		"overflow":       header(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, make([]byte, 4)),
		"negative dim":   header(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil),
		"reversed":       header(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4)),
		"overlap":        header(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, make([]byte, 4)),
		"hole":           header(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, make([]byte, 4)),
		"tail":           header(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, make([]byte, 4)),
		"meta not str":   header(`{"__metadata__":{"a":1}}`, nil),
		"meta not obj":   header(`{"__metadata__":[]}`, nil),
		"offsets 3":      header(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, []byte{1}),
		"missing fields": header(`{"a":{"dtype":"U8"}}`, nil),
		"deep":           header(`{"a":`+strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+`}`, nil),
	}
}

func TestCorrupt(t *testing.T) {
	for name, data := range corruptCases() {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(data)
			var ce *tensor.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want *tensor.CorruptError", err)
			}
			if errcode.Of(err) != errcode.ModelCorrupt {
				t.Errorf("code %s", errcode.Of(err))
			}
		})
	}
	_, err := Parse(header(`{"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, []byte{1}))
	var ue *tensor.UnsupportedDTypeError
	if !errors.As(err, &ue) {
		t.Errorf("unknown dtype: %v", err)
	}
}

func TestSharded(t *testing.T) {
	dir := t.TempDir()
	ts := sample()
	if err := WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), ts[:2], nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), ts[2:], nil); err != nil {
		t.Fatal(err)
	}
	wm := map[string]string{"w": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
		"s": "model-00002-of-00002.safetensors", "z": "model-00002-of-00002.safetensors"}
	write := func(wm map[string]string) string {
		raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 30}, "weight_map": wm})
		p := filepath.Join(dir, "model.safetensors.index.json")
		os.WriteFile(p, raw, 0o644)
		return p
	}
	s, err := OpenIndex(write(wm))
	if err != nil {
		t.Fatal(err)
	}
	sameTensors(t, s.Tensors(), ts)
	if len(s.Paths()) != 2 || s.Metadata()["total_size"] != "30" {
		t.Errorf("paths %v meta %v", s.Paths(), s.Metadata())
	}
	s.Close()

	bad := map[string]map[string]string{
		"wrong shard": {"w": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "s": "model-00002-of-00002.safetensors", "z": "model-00002-of-00002.safetensors"},
		"unlisted":    {"w": "model-00001-of-00002.safetensors", "s": "model-00002-of-00002.safetensors", "z": "model-00002-of-00002.safetensors"},
		"absent":      {"w": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "s": "model-00002-of-00002.safetensors", "z": "model-00002-of-00002.safetensors", "q": "model-00001-of-00002.safetensors"},
		"path escape": {"w": "../x.safetensors"},
	}
	for name, wm := range bad {
		if _, err := OpenIndex(write(wm)); errcode.Of(err) != errcode.ModelCorrupt {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(encode(&testing.T{}, sample(), map[string]string{"a": "b"}))
	for _, c := range corruptCases() {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			if errcode.Of(err) == errcode.LoadFailed && !errors.As(err, new(*tensor.UnsupportedDTypeError)) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// Whatever parsed must write back and parse to the same tensors.
		var buf bytes.Buffer
		if err := Write(&buf, file.Tensors(), file.Metadata()); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		sameTensors(t, again.Tensors(), file.Tensors())
	})
}
