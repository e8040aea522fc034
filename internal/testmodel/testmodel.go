// Package testmodel holds the model fixtures and backend wrappers that
// the tests of several packages share. Only tests import it.
package testmodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// OtherVocab copies the model folder dir (a Hugging Face folder such as
// testdata/models/qwen2-tiny) into a temporary folder with the ids of
// two tokens of its tokenizer swapped: the same size, another
// vocabulary. It returns the copy's path.
func OtherVocab(tb testing.TB, dir string) string {
	tb.Helper()
	out := tb.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			tb.Fatal(err)
		}
		if f == "tokenizer.json" {
			var tj map[string]any
			if err := json.Unmarshal(b, &tj); err != nil {
				tb.Fatal(err)
			}
			v := tj["model"].(map[string]any)["vocab"].(map[string]any)
			v["!"], v["#"] = v["#"], v["!"]
			if b, err = json.Marshal(tj); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// NoVocab writes a tiny random model whose GGUF has llama.cpp's
// "no_vocab" tokenizer, as vkllm bench --synthetic --write-gguf does, and
// returns its path.
func NoVocab(tb testing.TB) string {
	tb.Helper()
	s, err := synth.Lookup("qwen2.5-0.5b-tiny")
	if err != nil {
		tb.Fatal(err)
	}
	m, err := synth.Build(s, synth.Uniform(tensor.F32), 1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "novocab.gguf")
	if err := m.WriteFile(path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Counting is a kernels.Backend that counts the calls that allocate
// backend memory (NewTensor and Upload) on the backend it wraps. It hides
// the wrapped backend's optional interfaces (kernels.AttentionReserver…).
type Counting struct {
	kernels.Backend
	n atomic.Int64
}

// Allocs is the number of allocating calls so far.
func (c *Counting) Allocs() int64 { return c.n.Load() }

func (c *Counting) NewTensor(dt tensor.DType, shape ...int) (kernels.Tensor, error) {
	c.n.Add(1)
	return c.Backend.NewTensor(dt, shape...)
}

func (c *Counting) Upload(t tensor.Tensor) (kernels.Tensor, error) {
	c.n.Add(1)
	return c.Backend.Upload(t)
}

// LongContext copies the model folder dir into a temporary folder with
// max_position_embeddings set to positions (RoPE runs at any position;
// the weights are random anyway), for a test whose prompt is longer than
// the tiny models' 256 positions: a chat with tools described in the
// Hermes format. It returns the copy's path.
func LongContext(tb testing.TB, dir string, positions int) string {
	tb.Helper()
	out := tb.TempDir()
	if err := WriteLongContext(dir, out, positions); err != nil {
		tb.Fatal(err)
	}
	return out
}

// WriteLongContext is LongContext into the folder out (for a TestMain,
// whose Examples have no testing.TB).
func WriteLongContext(dir, out string, positions int) error {
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if f == "config.json" {
			var cfg map[string]any
			if err := json.Unmarshal(b, &cfg); err != nil {
				return err
			}
			cfg["max_position_embeddings"] = positions
			if b, err = json.Marshal(cfg); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(out, f), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
