package gguf

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// FuzzParse: any input parses or fails with a typed error, never panics;
// what parses satisfies the reader's promises and writes back to a file
// that parses to the same content.
//
// Seeds cover the attack classes on GGUF loaders (every hostile case:
// element counts whose product overflows, dims claiming more bytes than the
// file, offsets past the end, tensor/KV counts and string lengths larger
// than the file, deeply nested arrays, alignment 0 or not a power of two,
// overlapping tensors) plus valid files from Write and gguf-py.
func FuzzParse(f *testing.F) {
	f.Add(encode(f, sampleKV(), allDTypeTensors(rand.New(rand.NewPCG(1, 1))), 3))
	f.Add(encode(f, sampleKV()[:4], allDTypeTensors(rand.New(rand.NewPCG(2, 2)))[:3], 2))
	f.Add(encode(f, []KV{{"general.alignment", Value{Uint32, uint32(64)}}}, allDTypeTensors(rand.New(rand.NewPCG(3, 3)))[:2], 3))
	paths, _ := filepath.Glob(pyDir + "*.gguf")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, c := range hostileCases {
		b, _ := c.bytes()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			checkTyped(t, err)
			return
		}
		for i, tt := range g.Tensors() {
			n, err := tensor.NumElements(tt.Shape)
			size, err2 := tt.DType.Bytes(n)
			if err != nil || err2 != nil || int64(len(tt.Data)) != size || len(tt.Shape) > MaxDims {
				t.Fatalf("tensor %s: shape %v, %d bytes of %v", tt.Name, tt.Shape, len(tt.Data), tt.DType)
			}
			if end := g.DataOffset + int64(g.TensorInfos()[i].Offset) + size; end > int64(len(data)) {
				t.Fatalf("tensor %s ends at %d, past %d", tt.Name, end, len(data))
			}
		}
		// Whatever Parse accepts, Write accepts, and its output parses to
		// the same metadata and tensors (compared by their encoding, which
		// keeps NaN bits).
		var w1 bytes.Buffer
		if err := Write(&w1, g.KV, g.Tensors(), &WriteOptions{Version: g.Version}); err != nil {
			t.Fatalf("Write of a parsed file: %v", err)
		}
		again, err := Parse(w1.Bytes())
		if err != nil {
			t.Fatalf("Parse of a written file: %v", err)
		}
		var w2 bytes.Buffer
		if err := Write(&w2, again.KV, again.Tensors(), &WriteOptions{Version: again.Version}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w1.Bytes(), w2.Bytes()) || len(again.KV) != len(g.KV) || len(again.Tensors()) != len(g.Tensors()) {
			t.Fatal("round trip differs")
		}
		for i, tt := range again.Tensors() {
			if !bytes.Equal(tt.Data, g.Tensors()[i].Data) || tt.Name != g.Tensors()[i].Name {
				t.Fatalf("tensor %d differs after the round trip", i)
			}
		}
	})
}
