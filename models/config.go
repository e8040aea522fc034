package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
)

// RoPEScaling is a model's rope_scaling (HF) or rope.scaling.* (GGUF).
type RoPEScaling struct {
	Type                 string  `json:"type"` // "linear" or "llama3"
	Factor               float64 `json:"factor"`
	LowFreqFactor        float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor       float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositions int     `json:"original_max_position_embeddings,omitempty"`
}

// Config is the decoder configuration of a Llama-family model (Llama,
// Mistral, Qwen2, Qwen3, SmolLM3), parsed from config.json or from GGUF
// metadata.
type Config struct {
	Arch             string `json:"arch"` // registry name: "llama", "qwen2", …
	VocabSize        int    `json:"vocab_size"`
	HiddenSize       int    `json:"hidden_size"`
	IntermediateSize int    `json:"intermediate_size"`
	NumLayers        int    `json:"num_hidden_layers"`
	NumHeads         int    `json:"num_attention_heads"`
	NumKVHeads       int    `json:"num_key_value_heads"`
	HeadDim          int    `json:"head_dim"`
	// RMSNormEps is kept as float64 as parsed; kernels take float32.
	RMSNormEps   float64      `json:"rms_norm_eps"`
	RoPETheta    float64      `json:"rope_theta"`
	RoPEScaling  *RoPEScaling `json:"rope_scaling,omitempty"`
	MaxPositions int          `json:"max_position_embeddings"`
	TieEmbedding bool         `json:"tie_word_embeddings"`
	// AttentionBias: q, k, v (and for Llama's attention_bias also o)
	// projections carry biases. Qwen2 always has q/k/v biases.
	AttentionBias bool `json:"attention_bias"`
	OutputBias    bool `json:"o_proj_bias"`
	// QKNorm: q and k are RMS-normalised per head (weights of HeadDim)
	// before RoPE (Qwen3).
	QKNorm bool `json:"qk_norm,omitempty"`
	// SlidingWindow is the attention window of the layers SWALayers
	// marks: a token at position p sees the cells at positions in
	// (p − SlidingWindow, p]. 0 when no layer has a window.
	SlidingWindow int `json:"sliding_window,omitempty"`
	// SWALayers[l] says layer l attends through the window; nil when no
	// layer does.
	SWALayers []bool `json:"swa_layers,omitempty"`
	// NoRoPELayers[l] says layer l skips RoPE on q and k (SmolLM3's
	// no_rope_layers entries 0); nil when every layer rotates.
	NoRoPELayers []bool  `json:"no_rope_layers,omitempty"`
	BOS          []int32 `json:"bos_token_id"`
	EOS          []int32 `json:"eos_token_id"`
	TorchDType   string  `json:"torch_dtype,omitempty"`
}

// hfRaw is config.json with every field we read kept raw, so that a wrong
// JSON type is reported against its field.
type hfRaw map[string]json.RawMessage

// maxConfigBytes bounds config.json; real ones are a few KB.
const maxConfigBytes = 1 << 20

// ParseConfig parses a HF config.json. path is used in errors only.
// The architecture must be registered; otherwise *UnsupportedArchError.
func ParseConfig(data []byte, path string) (*Config, error) {
	if len(data) > maxConfigBytes {
		return nil, &ConfigError{Path: path, Reason: fmt.Sprintf("%d bytes, over the %d limit", len(data), maxConfigBytes)}
	}
	var raw hfRaw
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, &ConfigError{Path: path, Reason: "invalid JSON: " + err.Error()}
	}
	if raw == nil {
		return nil, &ConfigError{Path: path, Reason: "not a JSON object"}
	}
	p := &fieldParser{raw: raw, path: path}

	archs := p.strings("architectures")
	modelType := p.str("model_type", "")
	if p.err != nil {
		return nil, p.err
	}
	arch, err := lookupArch(archs, modelType)
	if err != nil {
		return nil, err
	}
	c := &Config{Arch: arch.Name}
	c.VocabSize = p.int("vocab_size", -1)
	c.HiddenSize = p.int("hidden_size", -1)
	c.IntermediateSize = p.int("intermediate_size", -1)
	c.NumLayers = p.int("num_hidden_layers", -1)
	c.NumHeads = p.int("num_attention_heads", -1)
	c.NumKVHeads = p.int("num_key_value_heads", 0)
	c.HeadDim = p.int("head_dim", 0)
	c.RMSNormEps = p.float("rms_norm_eps", 1e-6)
	c.RoPETheta = p.float("rope_theta", 10000)
	c.MaxPositions = p.int("max_position_embeddings", 2048)
	c.TieEmbedding = p.bool("tie_word_embeddings", arch.DefaultTie)
	c.BOS = p.ids("bos_token_id")
	c.EOS = p.ids("eos_token_id")
	c.TorchDType = p.str("torch_dtype", p.str("dtype", ""))
	if arch.QKVBias {
		c.AttentionBias = true
	} else if p.bool("attention_bias", false) {
		c.AttentionBias = true
		c.OutputBias = true
	}
	if p.bool("mlp_bias", false) {
		p.fail("mlp_bias", "MLP biases are not supported", true)
	}
	c.QKNorm = arch.QKNorm
	if act := p.str("hidden_act", "silu"); act != "silu" {
		p.fail("hidden_act", fmt.Sprintf("activation %q is not supported (only silu)", act), true)
	}
	c.RoPEScaling = p.ropeScaling()
	// transformers ≥ 5 writes rope_theta inside rope_parameters.
	if rp, ok := raw["rope_parameters"]; ok && !isNull(rp) {
		sub := &fieldParser{path: path, prefix: "rope_parameters."}
		if err := json.Unmarshal(rp, &sub.raw); err != nil {
			p.fail("rope_parameters", "not an object", false)
		} else if _, has := sub.raw["rope_theta"]; has {
			c.RoPETheta = sub.float("rope_theta", c.RoPETheta)
			if p.err == nil {
				p.err = sub.err
			}
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	c.SlidingWindow, c.SWALayers = p.slidingWindow(arch, c.NumLayers)
	c.NoRoPELayers = p.noRoPELayers(c.NumLayers)
	if p.err != nil {
		return nil, p.err
	}
	if c.NumKVHeads == 0 {
		c.NumKVHeads = c.NumHeads
	}
	if c.HeadDim == 0 && c.NumHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumHeads
		if c.HiddenSize%c.NumHeads != 0 {
			return nil, &ConfigError{Path: path, Field: "num_attention_heads", Reason: fmt.Sprintf("hidden_size %d is not a multiple of %d heads and head_dim is not given", c.HiddenSize, c.NumHeads)}
		}
	}
	if err := c.Validate(); err != nil {
		if ce, ok := err.(*ConfigError); ok {
			ce.Path = path
		}
		return nil, err
	}
	return c, nil
}

// Validate checks that sizes are positive and consistent.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	const maxDim = 1 << 24 // far beyond any real model; keeps products in int range
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize},
		{"intermediate_size", c.IntermediateSize}, {"num_hidden_layers", c.NumLayers},
		{"num_attention_heads", c.NumHeads}, {"num_key_value_heads", c.NumKVHeads},
		{"head_dim", c.HeadDim}, {"max_position_embeddings", c.MaxPositions},
	} {
		if f.v <= 0 || f.v > maxDim {
			return bad(f.name, "must be in [1, %d], got %d", maxDim, f.v)
		}
	}
	if c.NumLayers > 4096 {
		return bad("num_hidden_layers", "%d layers is implausible", c.NumLayers)
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return bad("num_key_value_heads", "%d attention heads are not a multiple of %d kv heads", c.NumHeads, c.NumKVHeads)
	}
	if c.HeadDim%2 != 0 {
		return bad("head_dim", "must be even for RoPE, got %d", c.HeadDim)
	}
	if int64(c.NumHeads)*int64(c.HeadDim) > maxDim {
		return bad("head_dim", "num_attention_heads × head_dim too large")
	}
	if !(c.RMSNormEps > 0 && c.RMSNormEps < 1) {
		return bad("rms_norm_eps", "must be in (0, 1), got %v", c.RMSNormEps)
	}
	if !(c.RoPETheta > 1) || math.IsInf(c.RoPETheta, 0) {
		return bad("rope_theta", "must be a finite number > 1, got %v", c.RoPETheta)
	}
	for _, id := range append(append([]int32{}, c.BOS...), c.EOS...) {
		if id < 0 || int(id) >= c.VocabSize {
			return bad("bos_token_id/eos_token_id", "token id %d outside the vocabulary of %d", id, c.VocabSize)
		}
	}
	if len(c.SWALayers) != 0 && len(c.SWALayers) != c.NumLayers {
		return bad("layer_types", "%d entries for %d layers", len(c.SWALayers), c.NumLayers)
	}
	if slices.Contains(c.SWALayers, true) != (c.SlidingWindow > 0) {
		return bad("sliding_window", "a window of %d with %d windowed layers", c.SlidingWindow, countTrue(c.SWALayers))
	}
	if len(c.NoRoPELayers) != 0 && len(c.NoRoPELayers) != c.NumLayers {
		return bad("no_rope_layers", "%d entries for %d layers", len(c.NoRoPELayers), c.NumLayers)
	}
	if s := c.RoPEScaling; s != nil {
		switch s.Type {
		case "linear":
			if !(s.Factor >= 1) || math.IsInf(s.Factor, 0) {
				return bad("rope_scaling.factor", "must be a finite number ≥ 1, got %v", s.Factor)
			}
		case "llama3":
			if !(s.Factor >= 1) || math.IsInf(s.Factor, 0) || !(s.LowFreqFactor > 0) || !(s.HighFreqFactor > s.LowFreqFactor) ||
				math.IsInf(s.HighFreqFactor, 0) || s.OriginalMaxPositions <= 0 {
				return bad("rope_scaling", "llama3 needs factor ≥ 1, 0 < low_freq_factor < high_freq_factor and original_max_position_embeddings > 0, got %+v", *s)
			}
		default:
			return &ConfigError{Field: "rope_scaling.type", Reason: fmt.Sprintf("RoPE scaling %q is not supported (supported: linear, llama3)", s.Type), Unsupported: true}
		}
	}
	return nil
}

// fieldParser reads typed fields from a raw JSON object, keeping the first
// error (with the field's name) and returning defaults after it.
type fieldParser struct {
	raw    hfRaw
	path   string
	prefix string
	err    error
}

func (p *fieldParser) fail(field, reason string, unsupported bool) {
	if p.err == nil {
		p.err = &ConfigError{Path: p.path, Field: p.prefix + field, Reason: reason, Unsupported: unsupported}
	}
}

func isNull(m json.RawMessage) bool {
	return len(bytes.TrimSpace(m)) == 0 || string(bytes.TrimSpace(m)) == "null"
}

// get returns the raw value, or false when absent or null.
func (p *fieldParser) get(field string) (json.RawMessage, bool) {
	m, ok := p.raw[field]
	if !ok || isNull(m) {
		return nil, false
	}
	return m, true
}

func (p *fieldParser) int(field string, def int) int {
	m, ok := p.get(field)
	if !ok {
		if def < 0 {
			p.fail(field, "missing", false)
			return 0
		}
		return def
	}
	var f float64
	if err := json.Unmarshal(m, &f); err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
		p.fail(field, fmt.Sprintf("want an integer, got %s", clip(m)), false)
		return 0
	}
	return int(f)
}

func (p *fieldParser) float(field string, def float64) float64 {
	m, ok := p.get(field)
	if !ok {
		return def
	}
	var f float64
	if err := json.Unmarshal(m, &f); err != nil {
		p.fail(field, fmt.Sprintf("want a number, got %s", clip(m)), false)
		return 0
	}
	return f
}

func (p *fieldParser) bool(field string, def bool) bool {
	m, ok := p.get(field)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(m, &b); err != nil {
		p.fail(field, fmt.Sprintf("want true or false, got %s", clip(m)), false)
		return false
	}
	return b
}

func (p *fieldParser) str(field, def string) string {
	m, ok := p.get(field)
	if !ok {
		return def
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		p.fail(field, fmt.Sprintf("want a string, got %s", clip(m)), false)
		return ""
	}
	return s
}

func (p *fieldParser) strings(field string) []string {
	m, ok := p.get(field)
	if !ok {
		return nil
	}
	var s []string
	if err := json.Unmarshal(m, &s); err != nil {
		p.fail(field, fmt.Sprintf("want a list of strings, got %s", clip(m)), false)
		return nil
	}
	return s
}

// ids reads a token id given as an integer or a list of integers.
func (p *fieldParser) ids(field string) []int32 {
	m, ok := p.get(field)
	if !ok {
		return nil
	}
	var one float64
	if json.Unmarshal(m, &one) == nil {
		if one != math.Trunc(one) || one < 0 || one > math.MaxInt32 {
			p.fail(field, fmt.Sprintf("want a token id, got %s", clip(m)), false)
			return nil
		}
		return []int32{int32(one)}
	}
	var many []float64
	if err := json.Unmarshal(m, &many); err != nil || len(many) > 1024 {
		p.fail(field, fmt.Sprintf("want a token id or a list of them, got %s", clip(m)), false)
		return nil
	}
	out := make([]int32, 0, len(many))
	for _, f := range many {
		if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
			p.fail(field, fmt.Sprintf("want token ids, got %s", clip(m)), false)
			return nil
		}
		out = append(out, int32(f))
	}
	return out
}

// ropeScaling reads rope_scaling, or (transformers ≥ 5) rope_parameters.
// "default" and absent mean none.
func (p *fieldParser) ropeScaling() *RoPEScaling {
	field := "rope_scaling"
	m, ok := p.get(field)
	if !ok {
		field = "rope_parameters"
		if m, ok = p.get(field); !ok {
			return nil
		}
	}
	sub := &fieldParser{path: p.path, prefix: field + "."}
	if err := json.Unmarshal(m, &sub.raw); err != nil || sub.raw == nil {
		p.fail(field, fmt.Sprintf("want an object, got %s", clip(m)), false)
		return nil
	}
	typ := sub.str("rope_type", sub.str("type", "default"))
	if typ == "default" {
		if p.err == nil {
			p.err = sub.err
		}
		return nil
	}
	s := &RoPEScaling{
		Type:                 typ,
		Factor:               sub.float("factor", 0),
		LowFreqFactor:        sub.float("low_freq_factor", 0),
		HighFreqFactor:       sub.float("high_freq_factor", 0),
		OriginalMaxPositions: sub.int("original_max_position_embeddings", 0),
	}
	if p.err == nil {
		p.err = sub.err
	}
	return s
}

func clip(m json.RawMessage) string {
	if len(m) > 40 {
		return string(m[:40]) + "…"
	}
	return string(m)
}

// Windowed reports whether layer l attends through the sliding window.
func (c *Config) Windowed(l int) bool { return l < len(c.SWALayers) && c.SWALayers[l] }

// RoPE reports whether layer l rotates q and k.
func (c *Config) RoPE(l int) bool { return l >= len(c.NoRoPELayers) || !c.NoRoPELayers[l] }

// AllWindowed reports whether every layer attends through the window, so
// that cells which fell out of it are never seen again (the KV cache may
// reuse them).
func (c *Config) AllWindowed() bool {
	return c.SlidingWindow > 0 && !slices.Contains(c.SWALayers, false)
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

// slidingWindow reads which layers attend through a window, and its
// size, by the architecture's rule (WindowRule). A window of at least
// max_position_embeddings still counts as one (it changes nothing).
func (p *fieldParser) slidingWindow(a *Arch, layers int) (int, []bool) {
	if a.Window == NoWindow || layers <= 0 || layers > 4096 {
		return 0, nil
	}
	window := p.int("sliding_window", 0)
	if a.Window == WindowAllLayers {
		if window <= 0 || p.err != nil {
			return 0, nil
		}
		swa := make([]bool, layers)
		for l := range swa {
			swa[l] = true
		}
		return window, swa
	}
	use := p.bool("use_sliding_window", false)
	types := p.strings("layer_types")
	if !use || p.err != nil {
		return 0, nil // transformers sets sliding_window to None: no layer has one
	}
	swa := make([]bool, layers)
	if types != nil {
		if len(types) != layers {
			p.fail("layer_types", fmt.Sprintf("%d entries for %d layers", len(types), layers), false)
			return 0, nil
		}
		for l, t := range types {
			switch t {
			case "full_attention":
			case "sliding_attention":
				swa[l] = true
			default:
				p.fail("layer_types", fmt.Sprintf("layer %d: attention type %q is not supported (full_attention, sliding_attention)", l, t), true)
				return 0, nil
			}
		}
	} else {
		for l := max(0, p.int("max_window_layers", layers)); l < layers; l++ {
			swa[l] = true
		}
	}
	if !slices.Contains(swa, true) {
		return 0, nil
	}
	if window <= 0 {
		p.fail("sliding_window", fmt.Sprintf("use_sliding_window needs a window > 0, got %d", window), false)
		return 0, nil
	}
	return window, swa
}

// noRoPELayers reads SmolLM3's no_rope_layers: one entry per layer, 1 for
// a layer with RoPE, 0 for one without. nil when absent or all 1.
func (p *fieldParser) noRoPELayers(layers int) []bool {
	m, ok := p.get("no_rope_layers")
	if !ok || p.err != nil {
		return nil
	}
	var v []int
	if err := json.Unmarshal(m, &v); err != nil {
		p.fail("no_rope_layers", fmt.Sprintf("want a list of 0 and 1, got %s", clip(m)), false)
		return nil
	}
	if len(v) != layers {
		p.fail("no_rope_layers", fmt.Sprintf("%d entries for %d layers", len(v), layers), false)
		return nil
	}
	out := make([]bool, layers)
	for l, x := range v {
		switch x {
		case 0:
			out[l] = true
		case 1:
		default:
			p.fail("no_rope_layers", fmt.Sprintf("layer %d: want 0 or 1, got %d", l, x), false)
			return nil
		}
	}
	if !slices.Contains(out, true) {
		return nil
	}
	return out
}
