package models

import (
	"fmt"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// layer holds one decoder block's weights on the backend. Biases are nil
// when the model has none.
type layer struct {
	attnNorm     kernels.Tensor    // (hidden) F32
	qkv          [3]kernels.Tensor // q, k, v: (heads*hd, hidden), (kv*hd, hidden), (kv*hd, hidden), as kernels.MatMuls takes them
	o            kernels.Tensor    // (hidden, heads*hd)
	qBias, kBias kernels.Tensor    // (heads*hd), (kv*hd) F32
	vBias, oBias kernels.Tensor    // (kv*hd), (hidden) F32
	ffnNorm      kernels.Tensor    // (hidden) F32
	gateUp       [2]kernels.Tensor // gate, up: (inter, hidden) each
	down         kernels.Tensor    // (hidden, inter)
}

// weights is the whole decoder on the backend.
type weights struct {
	embed   kernels.Tensor // (vocab, hidden), any dtype
	layers  []layer
	outNorm kernels.Tensor // (hidden) F32
	lmHead  kernels.Tensor // (vocab, hidden); the same tensor as embed when tied
	// freqFactors are llama.cpp's rope_freqs (hd/2), GGUF only.
	freqFactors []float32
	all         []kernels.Tensor // everything uploaded, for Free
}

// weightName maps a HF weight name (after "model.") to its GGUF name.
var ggufNames = map[string]string{
	"embed_tokens.weight":             "token_embd.weight",
	"norm.weight":                     "output_norm.weight",
	"lm_head.weight":                  "output.weight",
	"input_layernorm.weight":          "attn_norm.weight",
	"self_attn.q_proj.weight":         "attn_q.weight",
	"self_attn.k_proj.weight":         "attn_k.weight",
	"self_attn.v_proj.weight":         "attn_v.weight",
	"self_attn.o_proj.weight":         "attn_output.weight",
	"self_attn.q_proj.bias":           "attn_q.bias",
	"self_attn.k_proj.bias":           "attn_k.bias",
	"self_attn.v_proj.bias":           "attn_v.bias",
	"self_attn.o_proj.bias":           "attn_output.bias",
	"post_attention_layernorm.weight": "ffn_norm.weight",
	"mlp.gate_proj.weight":            "ffn_gate.weight",
	"mlp.up_proj.weight":              "ffn_up.weight",
	"mlp.down_proj.weight":            "ffn_down.weight",
}

// loader finds weights by HF name in either format, checks their shapes
// and puts them on the backend.
type loader struct {
	f   *Files
	b   kernels.Backend
	out *weights
}

// name returns the file's name for a HF weight: layer < 0 for a global one.
func (l *loader) name(layer int, hf string) string {
	if l.f.Format == FormatGGUF {
		g := ggufNames[hf]
		if layer >= 0 {
			return fmt.Sprintf("blk.%d.%s", layer, g)
		}
		return g
	}
	switch {
	case layer >= 0:
		return fmt.Sprintf("model.layers.%d.%s", layer, hf)
	case hf == "lm_head.weight":
		return hf
	default:
		return "model." + hf
	}
}

func (l *loader) find(layer int, hf string, shape ...int) (tensor.Tensor, error) {
	name := l.name(layer, hf)
	t, ok := l.f.Weights.Tensor(name)
	if !ok {
		return t, &WeightError{Name: name, Reason: "missing"}
	}
	if !sameShape(t.Shape, shape) {
		return t, &WeightError{Name: name, Reason: fmt.Sprintf("shape %v, want %v", t.Shape, shape)}
	}
	return t, nil
}

// matrix uploads a 2-D weight as it is stored (any dtype the backend takes).
func (l *loader) matrix(layer int, hf string, rows, cols int) (kernels.Tensor, error) {
	t, err := l.find(layer, hf, rows, cols)
	if err != nil {
		return nil, err
	}
	bt, err := l.b.Upload(t)
	if err != nil {
		return nil, fmt.Errorf("models: upload %s: %w", t.Name, err)
	}
	l.out.all = append(l.out.all, bt)
	return bt, nil
}

// vector uploads a 1-D weight (norm, bias) converted to F32.
func (l *loader) vector(layer int, hf string, n int) (kernels.Tensor, error) {
	t, err := l.find(layer, hf, n)
	if err != nil {
		return nil, err
	}
	host, err := toF32(t)
	if err != nil {
		return nil, err
	}
	bt, err := l.b.NewTensor(tensor.F32, n)
	if err != nil {
		return nil, err
	}
	l.out.all = append(l.out.all, bt)
	if err := l.b.SetF32(bt, host); err != nil {
		return nil, err
	}
	return bt, nil
}

func toF32(t tensor.Tensor) ([]float32, error) {
	n := t.NumElements()
	if n < 0 {
		return nil, &WeightError{Name: t.Name, Reason: "bad shape"}
	}
	out := make([]float32, n)
	if err := tensor.Dequantize(t.DType, t.Data, out); err != nil {
		return nil, fmt.Errorf("models: weight %q: %w", t.Name, err)
	}
	return out, nil
}

func sameShape(got []int64, want []int) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != int64(want[i]) {
			return false
		}
	}
	return true
}

// loadWeights checks every weight the config implies and uploads it.
// On failure everything uploaded so far is freed.
func loadWeights(f *Files, b kernels.Backend) (w *weights, err error) {
	c := f.Config
	l := &loader{f: f, b: b, out: &weights{}}
	defer func() {
		if err != nil {
			for _, t := range l.out.all {
				b.Free(t)
			}
		}
	}()
	w = l.out
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	if w.embed, err = l.matrix(-1, "embed_tokens.weight", c.VocabSize, c.HiddenSize); err != nil {
		return nil, err
	}
	if w.outNorm, err = l.vector(-1, "norm.weight", c.HiddenSize); err != nil {
		return nil, err
	}
	if c.TieEmbedding {
		w.lmHead = w.embed
	} else if w.lmHead, err = l.matrix(-1, "lm_head.weight", c.VocabSize, c.HiddenSize); err != nil {
		return nil, err
	}
	if f.Format == FormatGGUF {
		if t, ok := f.Weights.Tensor("rope_freqs.weight"); ok {
			if !sameShape(t.Shape, []int{c.HeadDim / 2}) {
				return nil, &WeightError{Name: t.Name, Reason: fmt.Sprintf("shape %v, want [%d]", t.Shape, c.HeadDim/2)}
			}
			if w.freqFactors, err = toF32(t); err != nil {
				return nil, err
			}
		}
	}
	w.layers = make([]layer, c.NumLayers)
	for i := range w.layers {
		ly := &w.layers[i]
		steps := []struct {
			dst        *kernels.Tensor
			hf         string
			rows, cols int // cols 0: a vector
			skip       bool
		}{
			{&ly.attnNorm, "input_layernorm.weight", c.HiddenSize, 0, false},
			{&ly.qkv[0], "self_attn.q_proj.weight", qDim, c.HiddenSize, false},
			{&ly.qkv[1], "self_attn.k_proj.weight", kvDim, c.HiddenSize, false},
			{&ly.qkv[2], "self_attn.v_proj.weight", kvDim, c.HiddenSize, false},
			{&ly.o, "self_attn.o_proj.weight", c.HiddenSize, qDim, false},
			{&ly.qBias, "self_attn.q_proj.bias", qDim, 0, !c.AttentionBias},
			{&ly.kBias, "self_attn.k_proj.bias", kvDim, 0, !c.AttentionBias},
			{&ly.vBias, "self_attn.v_proj.bias", kvDim, 0, !c.AttentionBias},
			{&ly.oBias, "self_attn.o_proj.bias", c.HiddenSize, 0, !c.OutputBias},
			{&ly.ffnNorm, "post_attention_layernorm.weight", c.HiddenSize, 0, false},
			{&ly.gateUp[0], "mlp.gate_proj.weight", c.IntermediateSize, c.HiddenSize, false},
			{&ly.gateUp[1], "mlp.up_proj.weight", c.IntermediateSize, c.HiddenSize, false},
			{&ly.down, "mlp.down_proj.weight", c.HiddenSize, c.IntermediateSize, false},
		}
		for _, s := range steps {
			if s.skip {
				continue
			}
			if s.cols == 0 {
				*s.dst, err = l.vector(i, s.hf, s.rows)
			} else {
				*s.dst, err = l.matrix(i, s.hf, s.rows, s.cols)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return w, nil
}

func (w *weights) free(b kernels.Backend) {
	for _, t := range w.all {
		b.Free(t)
	}
	w.all = nil
}
