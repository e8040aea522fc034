package server

import (
	"context"
	"errors"
	"testing"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/internal/testmodel"
)

// TestNoVocabRefused: a model without a tokenizer cannot serve text, so
// its load fails with engine.ErrNoTokenizer.
func TestNoVocabRefused(t *testing.T) {
	srv, err := New(Config{Models: []Spec{{Name: "novocab", Path: testmodel.NoVocab(t)}},
		Engine: engine.Options{Backend: "cpu", ContextLen: 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.WaitLoaded(context.Background()); !errors.Is(err, engine.ErrNoTokenizer) {
		t.Fatalf("WaitLoaded: %v, want ErrNoTokenizer", err)
	}
}
