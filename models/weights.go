package models

import (
	"context"
	"errors"
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
	qNorm, kNorm kernels.Tensor    // (hd) F32, per-head q/k RMSNorm (Qwen3); nil when none
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
	"self_attn.q_norm.weight":         "attn_q_norm.weight",
	"self_attn.k_norm.weight":         "attn_k_norm.weight",
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
		return t, &WeightError{Name: name, Reason: fmt.Sprintf("missing (want shape %v)", shape)}
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

// weightSpec is one weight the decoder needs: its HF name, its layer (-1
// for a global one), its shape (cols 0: a vector) and where loadWeights
// puts it.
type weightSpec struct {
	dst        *kernels.Tensor
	layer      int
	hf         string
	rows, cols int
}

// weightSpecs lists every weight c implies, in load order, with dst
// pointing into w (w.layers has c.NumLayers entries). The optional GGUF
// rope_freqs is not listed (see ropeFreqs); neither is lm_head when the
// embeddings are tied.
func weightSpecs(c *Config, w *weights) []weightSpec {
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	specs := []weightSpec{
		{&w.embed, -1, "embed_tokens.weight", c.VocabSize, c.HiddenSize},
		{&w.outNorm, -1, "norm.weight", c.HiddenSize, 0},
	}
	if !c.TieEmbedding {
		specs = append(specs, weightSpec{&w.lmHead, -1, "lm_head.weight", c.VocabSize, c.HiddenSize})
	}
	for i := range w.layers {
		ly := &w.layers[i]
		specs = append(specs,
			weightSpec{&ly.attnNorm, i, "input_layernorm.weight", c.HiddenSize, 0},
			weightSpec{&ly.qkv[0], i, "self_attn.q_proj.weight", qDim, c.HiddenSize},
			weightSpec{&ly.qkv[1], i, "self_attn.k_proj.weight", kvDim, c.HiddenSize},
			weightSpec{&ly.qkv[2], i, "self_attn.v_proj.weight", kvDim, c.HiddenSize},
			weightSpec{&ly.o, i, "self_attn.o_proj.weight", c.HiddenSize, qDim})
		if c.AttentionBias {
			specs = append(specs,
				weightSpec{&ly.qBias, i, "self_attn.q_proj.bias", qDim, 0},
				weightSpec{&ly.kBias, i, "self_attn.k_proj.bias", kvDim, 0},
				weightSpec{&ly.vBias, i, "self_attn.v_proj.bias", kvDim, 0})
		}
		if c.OutputBias {
			specs = append(specs, weightSpec{&ly.oBias, i, "self_attn.o_proj.bias", c.HiddenSize, 0})
		}
		if c.QKNorm {
			specs = append(specs,
				weightSpec{&ly.qNorm, i, "self_attn.q_norm.weight", c.HeadDim, 0},
				weightSpec{&ly.kNorm, i, "self_attn.k_norm.weight", c.HeadDim, 0})
		}
		specs = append(specs,
			weightSpec{&ly.ffnNorm, i, "post_attention_layernorm.weight", c.HiddenSize, 0},
			weightSpec{&ly.gateUp[0], i, "mlp.gate_proj.weight", c.IntermediateSize, c.HiddenSize},
			weightSpec{&ly.gateUp[1], i, "mlp.up_proj.weight", c.IntermediateSize, c.HiddenSize},
			weightSpec{&ly.down, i, "mlp.down_proj.weight", c.HiddenSize, c.IntermediateSize})
	}
	return specs
}

// ropeFreqs reads llama.cpp's optional rope_freqs (HeadDim/2 values) of a
// GGUF file; nil when there is none.
func (l *loader) ropeFreqs() ([]float32, error) {
	if l.f.Format != FormatGGUF {
		return nil, nil
	}
	t, ok := l.f.Weights.Tensor("rope_freqs.weight")
	if !ok {
		return nil, nil
	}
	if want := l.f.Config.HeadDim / 2; !sameShape(t.Shape, []int{want}) {
		return nil, &WeightError{Name: t.Name, Reason: fmt.Sprintf("shape %v, want [%d]", t.Shape, want)}
	}
	return toF32(t)
}

// loadWeights checks every weight the config implies and uploads it.
// On failure everything uploaded so far is freed.
// It checks ctx before each weight and calls progress (if not nil) after
// each with the bytes uploaded so far.
func loadWeights(ctx context.Context, f *Files, b kernels.Backend, progress func(done, total int64)) (w *weights, err error) {
	c := f.Config
	l := &loader{f: f, b: b, out: &weights{layers: make([]layer, c.NumLayers)}}
	defer func() {
		if err != nil {
			for _, t := range l.out.all {
				b.Free(t)
			}
		}
	}()
	w = l.out
	if w.freqFactors, err = l.ropeFreqs(); err != nil {
		return nil, err
	}
	specs := weightSpecs(c, w)
	var done, total int64
	size := func(s weightSpec) int64 {
		if t, ok := f.Weights.Tensor(l.name(s.layer, s.hf)); ok {
			return int64(len(t.Data))
		}
		return 0
	}
	for _, s := range specs {
		total += size(s)
	}
	for _, s := range specs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("models: load cancelled: %w", err)
		}
		if s.cols == 0 {
			*s.dst, err = l.vector(s.layer, s.hf, s.rows)
		} else {
			*s.dst, err = l.matrix(s.layer, s.hf, s.rows, s.cols)
		}
		if err != nil {
			return nil, err
		}
		if progress != nil {
			done += size(s)
			progress(done, total)
		}
	}
	if c.TieEmbedding {
		w.lmHead = w.embed
	}
	return w, nil
}

// Check reports whether Open would accept f's weights, without uploading
// any: every weight the configuration needs is present, has the shape the
// decoder expects, is in a dtype tensor.Dequantize knows (what the CPU
// backend takes; the Vulkan backend takes fewer) and holds as many bytes
// as its shape and dtype make. Each problem is a *WeightError; Check
// returns all of them joined (errors.Join), nil when there is none.
func (f *Files) Check() error {
	if f.Weights == nil {
		return ErrFilesClosed
	}
	c := f.Config
	l := &loader{f: f}
	var errs []error
	if _, err := l.ropeFreqs(); err != nil {
		errs = append(errs, err)
	}
	for _, s := range weightSpecs(c, &weights{layers: make([]layer, c.NumLayers)}) {
		rows, cols := s.rows, s.cols
		shape := []int{rows, cols}
		if cols == 0 {
			rows, cols, shape = 1, s.rows, []int{s.rows}
		}
		t, err := l.find(s.layer, s.hf, shape...)
		if err == nil {
			err = checkData(t, rows, cols)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkData reports a (rows, cols) weight whose dtype cannot be read or
// whose bytes do not match its shape: each row a whole number of blocks.
func checkData(t tensor.Tensor, rows, cols int) error {
	dt := t.DType
	if !tensor.Dequantizable(dt) {
		return &WeightError{Name: t.Name, Reason: fmt.Sprintf("dtype %v is not supported", dt)}
	}
	rb, err := dt.Bytes(int64(cols))
	if err != nil {
		return &WeightError{Name: t.Name, Reason: fmt.Sprintf("rows of %d values are not whole %v blocks of %d", cols, dt, dt.BlockSize())}
	}
	if int64(len(t.Data)) != rb*int64(rows) {
		return &WeightError{Name: t.Name, Reason: fmt.Sprintf("%d bytes, want %d for %v %v", len(t.Data), rb*int64(rows), dt, t.Shape)}
	}
	return nil
}

func (w *weights) free(b kernels.Backend) {
	for _, t := range w.all {
		b.Free(t)
	}
	w.all = nil
}
