//go:build cgo

package models

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// TestVulkanRepack: a model whose weights the Vulkan backend repacks
// (vulkan.DeviceInfo.Repacked: Q8_0 attention, Q4_1 FFN, a Q4_0
// embedding, with rows of 256) gives bitwise the logits of the same model
// in the file layout: a prompt of 20 tokens (the tiled prefill) and 6
// greedy decode steps (the matrix-vector and fused gate/up kernels).
func TestVulkanRepack(t *testing.T) {
	file := repackModel(t)
	tun := vulkan.Tuning{}
	for _, dt := range vulkan.RepackDTypes() {
		tun["layout/"+strings.ToLower(dt.String())] = vulkan.Knobs{"repack": 1}
	}
	var runs [2][][]float32
	for i, cfg := range []vulkan.Config{{}, {Tuning: tun}} {
		b := openVulkanConfig(t, cfg)
		if got := len(b.Device().Repacked); got != len(vulkan.RepackDTypes())*i {
			t.Fatalf("config %d: repacked %v", i, b.Device().Repacked)
		}
		g, err := gguf.Parse(file)
		if err != nil {
			t.Fatal(err)
		}
		m, err := OpenGGUF(context.Background(), "repack", g, WithBackend(b))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		runs[i] = greedyLogits(t, m, 20, 6)
	}
	for j := range runs[0] {
		if !bitwiseEqual(runs[1][j], runs[0][j]) {
			k, d, _ := farLogit(runs[1][j], runs[0][j], 0)
			t.Fatalf("logits %d: repacked differ from the file layout (token %d by %.3g)", j, k, d)
		}
	}
}

// greedyLogits decodes a prompt of n tokens at once, then steps greedy
// tokens one at a time, and returns the logits of the prompt's last
// token and of each step.
func greedyLogits(t *testing.T, m *Model, n, steps int) [][]float32 {
	t.Helper()
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
	var b Batch
	for i := range n {
		b.Add(int32(3+7*i%300), int32(i), i == n-1, 0)
	}
	var out [][]float32
	for s := 0; ; s++ {
		if err := ctx.Decode(b); err != nil {
			t.Fatal(err)
		}
		l := append([]float32(nil), ctx.Logits(b.Len()-1)...)
		lo, hi := l[0], l[0]
		for _, v := range l {
			lo, hi = min(lo, v), max(hi, v)
		}
		if !(hi-lo > 0) || math.IsInf(float64(hi-lo), 0) {
			t.Fatalf("step %d: logits in [%v, %v]", s, lo, hi)
		}
		out = append(out, l)
		if s == steps {
			return out
		}
		best := 0
		for j, v := range l {
			if v > l[best] {
				best = j
			}
		}
		b = Batch{}
		b.Add(int32(best), int32(n+s), true, 0)
	}
}

// repackModel is llama-tiny's architecture and tokenizer widened to
// hidden 256, FFN 256 and head dim 64 (every matrix's rows a multiple of
// 256 elements), with random weights: Q4_0 embedding and output, Q8_0
// attention, Q4_1 FFN, as GGUF bytes.
func repackModel(t *testing.T) []byte {
	t.Helper()
	f, err := gguf.Open(testdata + "/llama-tiny-F32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const hidden, ff, hd, heads, kvHeads, vocab = 256, 256, 64, 4, 2, 320
	set := map[string]uint32{"llama.embedding_length": hidden, "llama.feed_forward_length": ff,
		"llama.rope.dimension_count": hd, "llama.attention.key_length": hd, "llama.attention.value_length": hd}
	kv := make([]gguf.KV, 0, len(f.KV))
	for _, e := range f.KV {
		if v, ok := set[e.Key]; ok {
			e.Value = gguf.Value{Type: gguf.Uint32, V: v}
		}
		kv = append(kv, e)
	}
	r := rand.New(rand.NewPCG(5, 6))
	var ts []tensor.Tensor
	add := func(name string, dt tensor.DType, rows, cols int, scale, base float64) {
		x := make([]float32, rows*cols)
		for i := range x {
			x[i] = float32(base + scale*r.NormFloat64())
		}
		size, err := dt.Bytes(int64(rows * cols))
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		if err := tensor.Quantize(dt, x, data); err != nil {
			t.Fatal(err)
		}
		shape := []int64{int64(rows), int64(cols)}
		if rows == 1 {
			shape = shape[1:]
		}
		ts = append(ts, tensor.Tensor{Name: name, DType: dt, Shape: shape, Data: data})
	}
	add("rope_freqs.weight", tensor.F32, 1, hd/2, 0, 1)
	add("token_embd.weight", tensor.Q4_0, vocab, hidden, 1, 0)
	for l := range 2 {
		p := "blk." + string(rune('0'+l)) + "."
		add(p+"attn_q.weight", tensor.Q8_0, heads*hd, hidden, 0.06, 0)
		add(p+"attn_k.weight", tensor.Q8_0, kvHeads*hd, hidden, 0.06, 0)
		add(p+"attn_v.weight", tensor.Q8_0, kvHeads*hd, hidden, 0.06, 0)
		add(p+"attn_output.weight", tensor.Q8_0, hidden, heads*hd, 0.06, 0)
		add(p+"ffn_gate.weight", tensor.Q4_1, ff, hidden, 0.06, 0)
		add(p+"ffn_up.weight", tensor.Q4_1, ff, hidden, 0.06, 0)
		add(p+"ffn_down.weight", tensor.Q4_1, hidden, ff, 0.06, 0)
		add(p+"attn_norm.weight", tensor.F32, 1, hidden, 0.1, 1)
		add(p+"ffn_norm.weight", tensor.F32, 1, hidden, 0.1, 1)
	}
	add("output_norm.weight", tensor.F32, 1, hidden, 0.1, 1)
	add("output.weight", tensor.Q4_0, vocab, hidden, 0.06, 0)
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, ts, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
