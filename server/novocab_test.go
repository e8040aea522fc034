package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/tensor"
)

// TestOpenModelNoVocab: a model without a tokenizer cannot serve text,
// so OpenModel refuses it with engine.ErrNoTokenizer.
func TestOpenModelNoVocab(t *testing.T) {
	s, err := synth.Lookup("qwen2.5-0.5b-tiny")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := synth.Build(s, tensor.F32, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "novocab.gguf")
	if err := sm.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := OpenModel(context.Background(), path, engine.Options{Backend: "cpu", ContextLen: 256})
	if !errors.Is(err, engine.ErrNoTokenizer) {
		if m != nil {
			m.Gen.Close()
		}
		t.Fatalf("OpenModel: %v, want ErrNoTokenizer", err)
	}
}
