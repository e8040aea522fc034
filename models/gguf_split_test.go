package models

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/internal/testmodel"
)

// TestSplitGGUF: the first shard of a split GGUF opens the whole model,
// tensor for tensor the file it was split from; a missing or foreign
// shard is a typed error.
func TestSplitGGUF(t *testing.T) {
	src := "../testdata/models/qwen2-tiny-Q8_0.gguf"
	dir := t.TempDir()
	paths := testmodel.SplitGGUF(t, src, dir, "tiny-Q8_0", 3)
	whole, err := OpenFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	f, err := OpenFiles(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(f.WeightPaths) != 3 || f.Config.Arch != whole.Config.Arch {
		t.Errorf("opened %v (%s)", f.WeightPaths, f.Config.Arch)
	}
	want := whole.Weights.Tensors()
	if got := f.Weights.Tensors(); len(got) != len(want) {
		t.Fatalf("%d tensors, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := f.Weights.Tensor(w.Name)
		if !ok || g.DType != w.DType || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("tensor %s differs", w.Name)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	var se *SplitError
	if _, err := OpenFiles(paths[1]); !errors.As(err, &se) || errcode.Of(err) != errcode.ModelCorrupt {
		t.Errorf("opening the second shard: %v, want a *SplitError", err)
	}
	other := testmodel.SplitGGUF(t, src, t.TempDir(), "tiny-Q8_0", 2)
	os.Rename(other[1], paths[1]) // shard 2 of 2 where 2 of 3 belongs
	if _, err := OpenFiles(paths[0]); !errors.As(err, &se) {
		t.Errorf("a foreign shard: %v, want a *SplitError", err)
	}
	os.Remove(paths[1])
	var nf *NotFoundError
	if _, err := OpenFiles(paths[0]); !errors.As(err, &nf) || filepath.Base(nf.Path) != "tiny-Q8_0-00002-of-00003.gguf" {
		t.Errorf("a missing shard: %v, want a *NotFoundError naming it", err)
	}
}
