package server

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vkllm/vkllm/engine"
)

// OpenModel opens a model with engine.Open (cancelling ctx stops the load)
// and wraps it with NewModel.
func OpenModel(ctx context.Context, path string, opts engine.Options) (*Model, error) {
	l, err := engine.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return NewModel(l, path), nil
}

// NewModel is the Model of an open LLM: its quantisation is the GGUF's
// file type, else the one written at the end of path's name. The Model
// owns l from then on.
func NewModel(l *engine.LLM, path string) *Model {
	m := &Model{Gen: l, Quant: l.FileType(), Adapters: l.Adapters()}
	if m.Quant == "" {
		m.Quant = quantFromName(path)
	}
	return m
}

var quantRe = regexp.MustCompile(`(?i)[.\-_]((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32)(?:\.gguf)?$`)

// quantFromName is the quantisation written at the end of a file name
// ("SmolLM2-135M-Instruct.Q4_1.gguf" → "Q4_1"), "" when none is.
func quantFromName(path string) string {
	m := quantRe.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return ""
	}
	return strings.ToUpper(m[1])
}
