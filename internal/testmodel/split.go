package testmodel

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// SplitGGUF writes the GGUF file src as n shards in dir, as llama.cpp's
// gguf-split does (all metadata in the first, the tensors dealt out in
// order, split.no / split.count / split.tensors.count in each), named
// NAME-00001-of-0000N.gguf …; it returns their paths.
func SplitGGUF(t testing.TB, src, dir, name string, n int) []string {
	t.Helper()
	g, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ts := g.Tensors()
	split := func(no int) []gguf.KV {
		return []gguf.KV{
			{Key: "split.no", Value: gguf.Value{Type: gguf.Uint16, V: uint16(no)}},
			{Key: "split.count", Value: gguf.Value{Type: gguf.Uint16, V: uint16(n)}},
			{Key: "split.tensors.count", Value: gguf.Value{Type: gguf.Int32, V: int32(len(ts))}},
		}
	}
	var paths []string
	per := (len(ts) + n - 1) / n
	for i := range n {
		kv := split(i)
		if i == 0 {
			kv = append(append([]gguf.KV(nil), g.KV...), kv...)
		}
		part := ts[min(i*per, len(ts)):min((i+1)*per, len(ts))]
		var buf bytes.Buffer
		if err := gguf.Write(&buf, kv, append([]tensor.Tensor(nil), part...), nil); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("%s-%05d-of-%05d.gguf", name, i+1, n))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}
