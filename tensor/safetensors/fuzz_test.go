package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// FuzzParse: Parse never panics; it fails with a typed error pointing
// inside the input, or returns tensors that tile the data section as views
// of the input and survive Write → Parse unchanged.
//
//	go test ./tensor/safetensors -run='^$' -fuzz=FuzzParse -fuzztime=5m -parallel=1
func FuzzParse(f *testing.F) {
	f.Add(encode(f, sample(), map[string]string{"a": "b"}))
	f.Add(encode(f, nil, nil))
	for _, name := range []string{"python.safetensors", "unsupported.safetensors", "sharded/model-00001-of-00002.safetensors"} {
		if data, err := os.ReadFile("../../testdata/safetensors/" + name); err == nil {
			f.Add(data)
		}
	}
	for _, c := range corruptCases() { // huge / past-EOF header, overflow, overlap, negative dims, …
		f.Add(c.data)
	}
	f.Add(header(`{"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`, []byte{1}))
	f.Add(header(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add(header(`{"__metadata__":null,"a":{"dtype":"BF16","shape":[],"data_offsets":[0,2]}}`, []byte{1, 2}))
	f.Add(header(`{"__metadata__":{"a":{"b":"c"}}}`, nil))
	f.Add(header(`{"a":`+strings.Repeat(`{"a":`, 3000)+`1`+strings.Repeat(`}`, 3001), nil))

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var ce *tensor.CorruptError
			var ue *tensor.UnsupportedDTypeError
			switch {
			case errors.As(err, &ce):
				if ce.Offset < 0 || ce.Offset > int64(len(data)) {
					t.Fatalf("offset %d outside the %d-byte input: %v", ce.Offset, len(data), err)
				}
			case errors.As(err, &ue):
			default:
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		pos := 8 + int(binary.LittleEndian.Uint64(data))
		if !json.Valid(data[8:pos]) {
			t.Fatal("accepted a header that is not valid JSON")
		}
		// The tensors, in order, are views tiling the data section.
		for _, tt := range file.Tensors() {
			n, err := tensor.NumElements(tt.Shape)
			if err != nil {
				t.Fatal(err)
			}
			if size, err := tt.DType.Bytes(n); err != nil || size != int64(len(tt.Data)) {
				t.Fatalf("%q: %d bytes for shape %v of %v", tt.Name, len(tt.Data), tt.Shape, tt.DType)
			}
			if len(tt.Data) > 0 && &tt.Data[0] != &data[pos] {
				t.Fatalf("%q is not the view at %d", tt.Name, pos)
			}
			pos += len(tt.Data)
			if got, ok := file.Tensor(tt.Name); !ok || len(got.Data) != len(tt.Data) || (len(got.Data) > 0 && &got.Data[0] != &tt.Data[0]) {
				t.Fatalf("Tensor(%q) disagrees with Tensors()", tt.Name)
			}
		}
		if pos != len(data) {
			t.Fatalf("tensors end at %d of %d bytes", pos, len(data))
		}
		// Whatever parsed writes back and parses to the same tensors.
		var buf bytes.Buffer
		if err := Write(&buf, file.Tensors(), file.Metadata()); err != nil {
			t.Fatal(err)
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		sameTensors(t, again.Tensors(), file.Tensors())
		if !maps.Equal(again.Metadata(), file.Metadata()) {
			t.Fatalf("metadata %q, want %q", again.Metadata(), file.Metadata())
		}
	})
}

// FuzzIndex: the index parser never panics and fails only with a
// *headerError inside the input.
func FuzzIndex(f *testing.F) {
	if raw, err := os.ReadFile("../../testdata/safetensors/sharded/model.safetensors.index.json"); err == nil {
		f.Add(raw)
	}
	f.Add([]byte(`{"metadata":{"total_size":1,"s":"x","n":null},"weight_map":{"a":"b.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"x","a":"y"}}`))
	f.Add([]byte(`{"metadata":null,"weight_map":{"a":1}}`))
	f.Add([]byte(`{"weight_map":` + strings.Repeat("[", 20000)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		wm, _, err := parseIndex(raw)
		if err != nil {
			var he *headerError
			if !errors.As(err, &he) || he.offset < 0 || he.offset > int64(len(raw)) {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON (weight_map %q)", wm)
		}
	})
}
