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
	"github.com/vkllm/vkllm/tensor/safetensors"
)

// folder copies a test model folder's files into a temp dir.
func folder(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(filepath.Join(testdata, from))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(testdata, from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644)
	}
	return dir
}

func TestFolderRules(t *testing.T) {
	check := func(name string, err error, code errcode.Code, target any) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if errcode.Of(err) != code {
			t.Errorf("%s: code %s, want %s (%v)", name, errcode.Of(err), code, err)
		}
		if target != nil && !errors.As(err, target) {
			t.Errorf("%s: %v is not a %T", name, err, target)
		}
	}
	_, err := OpenFiles(filepath.Join(t.TempDir(), "nope"))
	check("missing path", err, errcode.LoadFailed, new(*NotFoundError))
	_, err = OpenFiles("hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M")
	check("a Hub name", err, errcode.LoadFailed, new(*NotFoundError))
	if !strings.Contains(err.Error(), "hub.Resolve") {
		t.Errorf("a Hub name: %v does not say how to pull it", err)
	}

	dir := folder(t, "qwen2-tiny")
	os.Remove(filepath.Join(dir, "tokenizer.json"))
	_, err = OpenFiles(dir)
	check("no tokenizer.json", err, errcode.LoadFailed, new(*NotFoundError))

	dir = folder(t, "qwen2-tiny")
	os.Remove(filepath.Join(dir, "config.json"))
	_, err = OpenFiles(dir)
	check("no config.json", err, errcode.LoadFailed, new(*NotFoundError))

	dir = folder(t, "qwen2-tiny")
	os.Remove(filepath.Join(dir, "model.safetensors"))
	_, err = OpenFiles(dir)
	check("no weights", err, errcode.LoadFailed, new(*NotFoundError))

	dir = folder(t, "qwen2-tiny")
	data, _ := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	os.WriteFile(filepath.Join(dir, "other.safetensors"), data, 0o644)
	_, err = OpenFiles(dir)
	check("two safetensors", err, errcode.LoadFailed, new(*AmbiguousError))

	// An unsupported architecture fails before any weight is read: the
	// weights here are garbage, and the error is still about the arch.
	dir = folder(t, "qwen2-tiny")
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	cfg = []byte(strings.Replace(string(cfg), "Qwen2ForCausalLM", "GPT2LMHeadModel", 1))
	cfg = []byte(strings.Replace(string(cfg), `"model_type": "qwen2"`, `"model_type": "gpt2"`, 1))
	os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("garbage"), 0o644)
	_, err = OpenFiles(dir)
	check("unsupported arch", err, errcode.ArchUnsupported, new(*UnsupportedArchError))
	if err.Error() != `model architecture "GPT2LMHeadModel" is not supported; supported: [llama mistral qwen2 qwen3 smollm3]` {
		t.Errorf("message: %v", err)
	}

	dir = folder(t, "qwen2-tiny")
	os.WriteFile(filepath.Join(dir, "model.safetensors"), []byte("garbage"), 0o644)
	_, err = OpenFiles(dir)
	check("corrupt weights", err, errcode.ModelCorrupt, new(*tensor.CorruptError))

	// A GGUF of an unsupported architecture.
	path := filepath.Join(t.TempDir(), "x.gguf")
	f, _ := os.Create(path)
	gguf.Write(f, []gguf.KV{{Key: "general.architecture", Value: gguf.Value{Type: gguf.String, V: "mamba"}}}, nil, nil)
	f.Close()
	_, err = OpenFiles(path)
	check("gguf arch", err, errcode.ArchUnsupported, new(*UnsupportedArchError))

	// A weight of the wrong shape.
	dir = folder(t, "qwen2-tiny")
	sf, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var ts []tensor.Tensor
	for _, tt := range sf.Tensors() {
		if tt.Name == "model.norm.weight" {
			tt.Shape = []int64{32, 2}
		}
		ts = append(ts, tt)
	}
	os.Remove(filepath.Join(dir, "model.safetensors"))
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
		t.Fatal(err)
	}
	sf.Close()
	_, err = Open(context.Background(), dir)
	check("wrong shape", err, errcode.ModelCorrupt, new(*WeightError))
}

func TestGGUFConfig(t *testing.T) {
	for _, pair := range [][2]string{{"qwen2-tiny", "qwen2-tiny-Q8_0.gguf"}, {"llama-tiny", "llama-tiny-F16.gguf"}} {
		hf, err := OpenFiles(filepath.Join(testdata, pair[0]))
		if err != nil {
			t.Fatal(err)
		}
		gg, err := OpenFiles(filepath.Join(testdata, pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		a, b := *hf.Config, *gg.Config
		// GGUF keeps Llama 3 scaling as the rope_freqs tensor, and stores eps as float32.
		a.RoPEScaling, b.RoPEScaling = nil, nil
		a.TorchDType, b.TorchDType = "", ""
		if float32(a.RMSNormEps) != float32(b.RMSNormEps) {
			t.Errorf("%s: eps %v vs %v", pair[1], a.RMSNormEps, b.RMSNormEps)
		}
		a.RMSNormEps, b.RMSNormEps = 0, 0
		if a.Arch != b.Arch || a.HiddenSize != b.HiddenSize || a.HeadDim != b.HeadDim || a.NumKVHeads != b.NumKVHeads ||
			a.VocabSize != b.VocabSize || a.TieEmbedding != b.TieEmbedding || a.AttentionBias != b.AttentionBias ||
			a.RoPETheta != b.RoPETheta || a.IntermediateSize != b.IntermediateSize || a.NumLayers != b.NumLayers {
			t.Errorf("%s: config %+v, HF %+v", pair[1], b, a)
		}
		hf.Close()
		gg.Close()
	}
}

// TestOpenProgressAndCancel: WithProgress reports every byte of the
// weights, rising to the total; a cancelled context stops the upload
// between two weights.
func TestOpenProgressAndCancel(t *testing.T) {
	path := filepath.Join(testdata, "llama-tiny-Q4_1.gguf")
	var calls, last, total int64
	m, err := Open(context.Background(), path, WithProgress(func(done, tot int64) {
		if done < last || (total != 0 && tot != total) || done > tot {
			t.Errorf("progress %d/%d after %d/%d", done, tot, last, total)
		}
		calls++
		last, total = done, tot
	}))
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if calls < int64(m.Config.NumLayers) || last != total || total == 0 {
		t.Fatalf("%d progress calls, last %d of %d", calls, last, total)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var seen int
	_, err = Open(ctx, path, WithProgress(func(done, tot int64) {
		if seen++; seen == 3 {
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) || seen != 3 {
		t.Fatalf("Open after cancel: err %v after %d weights", err, seen)
	}
	if _, err := Open(nil, path); !errors.Is(err, ErrBadParams) { //nolint:staticcheck // a nil context is the case under test
		t.Fatalf("nil context: %v", err)
	}
}
