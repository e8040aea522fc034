package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// withKV writes src's tensors with src's metadata plus extra (replacing
// keys of the same name) to a new GGUF file and returns its path.
func withKV(t *testing.T, src string, extra ...gguf.KV) string {
	t.Helper()
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kv := slices.DeleteFunc(slices.Clone(f.KV), func(e gguf.KV) bool {
		return slices.ContainsFunc(extra, func(x gguf.KV) bool { return x.Key == e.Key })
	})
	path := filepath.Join(t.TempDir(), "swa.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gguf.Write(out, append(kv, extra...), f.Tensors(), nil); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func windowKV(arch string, window uint32) gguf.KV {
	return gguf.KV{Key: arch + ".attention.sliding_window", Value: gguf.Value{Type: gguf.Uint32, V: window}}
}

func patternKV(arch string, pattern ...bool) gguf.KV {
	return gguf.KV{Key: arch + ".attention.sliding_window_pattern",
		Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.Bool, V: pattern}}}
}

// TestGGUFSlidingWindow: llama.cpp's attention.sliding_window and its
// per-layer pattern become Config.SlidingWindow and SWALayers; a window
// without a pattern, or a pattern of the wrong length, is refused; a
// windowed layer sees only the window once a sequence outgrows it.
func TestGGUFSlidingWindow(t *testing.T) {
	src := filepath.Join(testdata, "qwen2-tiny-F32.gguf") // 2 layers
	for _, c := range []struct {
		name    string
		kv      []gguf.KV
		window  int
		layers  []bool
		errCode errcode.Code
	}{
		{"window and pattern", []gguf.KV{windowKV("qwen2", 8), patternKV("qwen2", true, false)}, 8, []bool{true, false}, ""},
		{"every layer", []gguf.KV{windowKV("qwen2", 8), patternKV("qwen2", true, true)}, 8, []bool{true, true}, ""},
		{"no windowed layer", []gguf.KV{windowKV("qwen2", 8), patternKV("qwen2", false, false)}, 0, nil, ""},
		{"pattern, no window", []gguf.KV{patternKV("qwen2", true, false)}, 0, nil, ""},
		{"window, no pattern", []gguf.KV{windowKV("qwen2", 8)}, 0, nil, errcode.LoadFailed},
		{"pattern of 3 layers", []gguf.KV{windowKV("qwen2", 8), patternKV("qwen2", true, false, true)}, 0, nil, errcode.ModelCorrupt},
	} {
		t.Run(c.name, func(t *testing.T) {
			files, err := OpenFiles(withKV(t, src, c.kv...))
			if c.errCode != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || errcode.Of(err) != c.errCode {
					t.Fatalf("err %v (%s), want a *ConfigError with %s", err, errcode.Of(err), c.errCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer files.Close()
			if got := files.Config; got.SlidingWindow != c.window || !slices.Equal(got.SWALayers, c.layers) {
				t.Fatalf("window %d, layers %v; want %d, %v", got.SlidingWindow, got.SWALayers, c.window, c.layers)
			}
		})
	}

	// Decoding: within the window the windowed model is the full one,
	// bit for bit; past it, its logits differ.
	full, err := Open(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { full.Close() })
	swa, err := Open(context.Background(), withKV(t, src, windowKV("qwen2", 8), patternKV("qwen2", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { swa.Close() })
	prompt := make([]int32, 20)
	for i := range prompt {
		prompt[i] = int32(3 + i*11%300)
	}
	a, b := decodeAlone(t, full, prompt, 0), decodeAlone(t, swa, prompt, 0)
	for p := range prompt {
		same := slices.Equal(a[p], b[p])
		if p < 8 && !same {
			t.Errorf("position %d, inside the window: logits differ", p)
		}
		if p >= 8 && same {
			t.Errorf("position %d, past the window: logits equal the full model's", p)
		}
	}
}
