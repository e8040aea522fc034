package server

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// OpenModel opens a model with engine.Open and reads what the server needs
// besides: its quantisation and its tool-call format.
func OpenModel(path string, opts engine.Options) (*Model, error) {
	l, err := engine.Open(context.Background(), path, opts)
	if err != nil {
		return nil, err
	}
	m := &Model{Gen: l, Quant: quantFromName(path)}
	var cc *chat.Config
	if strings.EqualFold(filepath.Ext(path), ".gguf") {
		if g, err := gguf.Open(path); err == nil {
			if q := quantFromGGUF(g); q != "" {
				m.Quant = q
			}
			cc = chat.ConfigFromGGUF(g)
			g.Close()
		}
	} else {
		cc, _ = chat.LoadConfig(path)
	}
	if cc != nil {
		m.ToolFormat = chat.DetectToolFormat(cc.TemplateFor(true))
	}
	return m, nil
}

// fileTypes are llama.cpp's LLAMA_FTYPE_MOSTLY_* names by general.file_type.
var fileTypes = map[int64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
}

// quantFromGGUF is the quantisation of general.file_type.
func quantFromGGUF(g *gguf.File) string {
	if ft, ok := g.Int("general.file_type"); ok {
		return fileTypes[ft]
	}
	return ""
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
