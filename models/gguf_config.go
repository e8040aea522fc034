package models

import (
	"fmt"
	"math"
	"slices"

	"github.com/vkllm/vkllm/tensor/gguf"
)

// ConfigFromGGUF maps GGUF metadata (general.architecture and the
// "<arch>.*" keys llama.cpp writes) to the same Config as config.json.
// The architecture is checked first.
func ConfigFromGGUF(g *gguf.File) (*Config, error) {
	archName, _ := g.String("general.architecture")
	arch, err := lookupArch(nil, archName)
	if err != nil {
		return nil, err
	}
	p := &ggufParser{g: g, prefix: arch.Name + "."}
	c := &Config{Arch: arch.Name}
	c.HiddenSize = p.int("embedding_length", -1)
	c.IntermediateSize = p.int("feed_forward_length", -1)
	c.NumLayers = p.int("block_count", -1)
	c.NumHeads = p.int("attention.head_count", -1)
	c.NumKVHeads = p.int("attention.head_count_kv", c.NumHeads)
	c.MaxPositions = p.int("context_length", 2048)
	c.RMSNormEps = p.float("attention.layer_norm_rms_epsilon", 1e-6)
	c.RoPETheta = p.float("rope.freq_base", 10000)
	if c.NumHeads > 0 {
		c.HeadDim = p.int("attention.key_length", c.HiddenSize/c.NumHeads)
		if v := p.int("attention.value_length", c.HeadDim); v != c.HeadDim {
			p.fail("attention.value_length", fmt.Sprintf("%d differs from key_length %d", v, c.HeadDim), true)
		}
		if rd := p.int("rope.dimension_count", c.HeadDim); rd != c.HeadDim {
			p.fail("rope.dimension_count", fmt.Sprintf("partial RoPE (%d of %d) is not supported", rd, c.HeadDim), true)
		}
	}
	c.VocabSize = p.int("vocab_size", 0)
	if c.VocabSize == 0 {
		if toks, ok := g.Strings("tokenizer.ggml.tokens"); ok {
			c.VocabSize = len(toks)
		} else if t, ok := g.Tensor("token_embd.weight"); ok && len(t.Shape) == 2 && t.Shape[0] <= math.MaxInt32 {
			c.VocabSize = int(t.Shape[0])
		}
	}
	switch typ, _ := g.String(p.prefix + "rope.scaling.type"); typ {
	case "", "none":
	case "linear":
		c.RoPEScaling = &RoPEScaling{Type: "linear", Factor: p.float("rope.scaling.factor", 0)}
	default:
		p.fail("rope.scaling.type", fmt.Sprintf("RoPE scaling %q is not supported (supported: linear, llama3 as rope_freqs)", typ), true)
	}
	if _, ok := g.Tensor("output.weight"); !ok {
		c.TieEmbedding = true
	}
	c.QKNorm = arch.QKNorm
	c.SlidingWindow, c.SWALayers = p.slidingWindow(c.NumLayers)
	if arch.GGUFNoRoPEStep > 0 && c.NumLayers > 0 && c.NumLayers <= 4096 {
		c.NoRoPELayers = make([]bool, c.NumLayers)
		for l := range c.NoRoPELayers {
			c.NoRoPELayers[l] = (l+1)%arch.GGUFNoRoPEStep == 0
		}
		if !slices.Contains(c.NoRoPELayers, true) {
			c.NoRoPELayers = nil
		}
	}
	_, c.AttentionBias = g.Tensor("blk.0.attn_q.bias")
	_, c.OutputBias = g.Tensor("blk.0.attn_output.bias")
	if id, ok := g.Int("tokenizer.ggml.bos_token_id"); ok && id >= 0 && id < math.MaxInt32 {
		c.BOS = []int32{int32(id)}
	}
	if id, ok := g.Int("tokenizer.ggml.eos_token_id"); ok && id >= 0 && id < math.MaxInt32 {
		c.EOS = []int32{int32(id)}
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := c.Validate(); err != nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.Path = "gguf metadata"
		}
		return nil, err
	}
	return c, nil
}

type ggufParser struct {
	g      *gguf.File
	prefix string
	err    error
}

func (p *ggufParser) fail(key, reason string, unsupported bool) {
	if p.err == nil {
		p.err = &ConfigError{Path: "gguf metadata", Field: p.prefix + key, Reason: reason, Unsupported: unsupported}
	}
}

func (p *ggufParser) int(key string, def int) int {
	if _, present := p.g.Get(p.prefix + key); !present {
		if def < 0 {
			p.fail(key, "missing", false)
			return 0
		}
		return def
	}
	v, ok := p.g.Int(p.prefix + key)
	if !ok || v < 0 || v > math.MaxInt32 {
		p.fail(key, "want a non-negative integer", false)
		return 0
	}
	return int(v)
}

func (p *ggufParser) float(key string, def float64) float64 {
	if _, present := p.g.Get(p.prefix + key); !present {
		return def
	}
	v, ok := p.g.Float(p.prefix + key)
	if !ok {
		p.fail(key, "want a number", false)
		return 0
	}
	return v
}

// slidingWindow reads llama.cpp's attention.sliding_window and
// attention.sliding_window_pattern (one bool per layer, true: windowed).
// A window without a pattern is refused: which layers it applies to is
// the architecture's code in llama.cpp, not the file's.
func (p *ggufParser) slidingWindow(layers int) (int, []bool) {
	window := p.int("attention.sliding_window", 0)
	if window == 0 || p.err != nil {
		return 0, nil
	}
	v, _ := p.g.Get(p.prefix + "attention.sliding_window_pattern")
	a, _ := v.V.(gguf.Array)
	pattern, ok := a.V.([]bool)
	if !ok {
		p.fail("attention.sliding_window_pattern", "a sliding window needs a per-layer pattern (an array of bools)", true)
		return 0, nil
	}
	if len(pattern) != layers {
		p.fail("attention.sliding_window_pattern", fmt.Sprintf("%d entries for %d layers", len(pattern), layers), false)
		return 0, nil
	}
	if !slices.Contains(pattern, true) {
		return 0, nil
	}
	return window, slices.Clone(pattern)
}
