package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// rewriteGGUF writes a copy of a test GGUF file with edit applied to its
// tensors and returns its path.
func rewriteGGUF(t *testing.T, from string, edit func([]tensor.Tensor) []tensor.Tensor) string {
	t.Helper()
	src, err := gguf.Open(filepath.Join(testdata, from))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(t.TempDir(), from)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := gguf.Write(out, src.KV, edit(src.Tensors()), nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// editTensor applies f to the tensor named name (dropping it when f
// returns false).
func editTensor(name string, f func(*tensor.Tensor) bool) func([]tensor.Tensor) []tensor.Tensor {
	return func(ts []tensor.Tensor) []tensor.Tensor {
		var out []tensor.Tensor
		for _, t := range ts {
			if t.Name == name && !f(&t) {
				continue
			}
			out = append(out, t)
		}
		return out
	}
}

func TestCheck(t *testing.T) {
	for _, path := range []string{"qwen2-tiny", "llama-tiny-sharded", "qwen2-tiny-Q4_1.gguf", "llama-tiny-Q8_0.gguf", "llama-tiny-BF16.gguf"} {
		t.Run(path, func(t *testing.T) {
			f, err := OpenFiles(filepath.Join(testdata, path))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
		})
	}

	for _, tc := range []struct {
		name   string
		tensor string
		edit   func(*tensor.Tensor) bool
		reason string // in the error
	}{
		{"missing", "blk.1.attn_k.weight", func(*tensor.Tensor) bool { return false }, "missing"},
		{"transposed", "blk.1.ffn_gate.weight", func(t *tensor.Tensor) bool {
			t.Shape = []int64{t.Shape[1], t.Shape[0]}
			return true
		}, "shape [64 128], want [128 64]"},
		{"bad dtype", "output_norm.weight", func(t *tensor.Tensor) bool {
			t.DType = tensor.I32 // as many bytes as F32
			return true
		}, "dtype I32 is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := rewriteGGUF(t, "qwen2-tiny-F32.gguf", editTensor(tc.tensor, tc.edit))
			f, err := OpenFiles(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			err = f.Check()
			var we *WeightError
			if !errors.As(err, &we) || we.Name != tc.tensor || !strings.Contains(we.Reason, tc.reason) {
				t.Fatalf("Check: %v; want a WeightError for %s: %s", err, tc.tensor, tc.reason)
			}
			if errcode.Of(err) != errcode.ModelCorrupt {
				t.Errorf("code %v", errcode.Of(err))
			}
			// Open refuses what Check refuses.
			if m, err := Open(context.Background(), path); err == nil {
				m.Close()
				t.Errorf("Open accepted what Check refused")
			}
		})
	}

	t.Run("every problem", func(t *testing.T) {
		path := rewriteGGUF(t, "qwen2-tiny-F32.gguf", func(ts []tensor.Tensor) []tensor.Tensor {
			var out []tensor.Tensor
			for _, t := range ts {
				if !strings.HasSuffix(t.Name, ".ffn_up.weight") {
					out = append(out, t)
				}
			}
			return out
		})
		f, err := OpenFiles(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = f.Check()
		for _, name := range []string{"blk.0.ffn_up.weight", "blk.1.ffn_up.weight"} {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("Check: %v; want %s in it", err, name)
			}
		}
	})

	t.Run("closed", func(t *testing.T) {
		f, err := OpenFiles(filepath.Join(testdata, "qwen2-tiny"))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := f.Check(); !errors.Is(err, ErrFilesClosed) {
			t.Fatalf("Check after Close: %v", err)
		}
	})
}
