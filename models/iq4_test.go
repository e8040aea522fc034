package models

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// kvaluesIQ4 are IQ4_NL's 16 levels (ggml's kvalues_iq4nl).
var kvaluesIQ4 = [16]float32{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// quantIQ4NL is a plain IQ4_NL quantiser for the test: per block of 32,
// d = (the value of largest magnitude)/−127 rounded to f16, each value
// the nearest level d·kvaluesIQ4[q].
func quantIQ4NL(x []float32) []byte {
	out := make([]byte, 0, len(x)/32*18)
	for b := 0; b < len(x); b += 32 {
		blk := x[b : b+32]
		var mx float32
		for _, v := range blk {
			if abs(v) > abs(mx) {
				mx = v
			}
		}
		h := float16.Fromfloat32(mx / -127)
		d := h.Float32()
		var q [32]byte
		for i, v := range blk {
			best := float32(math.Inf(1))
			for j, k := range kvaluesIQ4 {
				if e := abs(d*k - v); e < best {
					best, q[i] = e, byte(j)
				}
			}
		}
		out = binary.LittleEndian.AppendUint16(out, h.Bits())
		for i := range 16 {
			out = append(out, q[i]|q[i+16]<<4)
		}
	}
	return out
}

func abs(v float32) float32 { return float32(math.Abs(float64(v))) }

// TestIQ4NLModel: llama-tiny with every matrix (the embedding, tied to the
// output, and the layers' attention and FFN weights) in IQ4_NL, written as
// a GGUF file and opened from it, runs on the fast CPU backend (its
// IQ4_NL kernel on 8-bit activations) and on cpu-ref (the dequantised
// weights in float32): finite logits that agree to the activations'
// quantisation error (NMSE under 1e-3 over 8 positions; a wrong kernel is
// of order 1).
func TestIQ4NLModel(t *testing.T) {
	file := iq4NLModel(t)
	logits := map[string][]float32{}
	for _, be := range []string{"cpu", "cpu-ref"} {
		g, err := gguf.Parse(file)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := g.Tensor("blk.0.ffn_up.weight"); !ok || w.DType != tensor.IQ4_NL {
			t.Fatalf("blk.0.ffn_up.weight: %v, %v", w.DType, ok)
		}
		m, err := OpenGGUF(context.Background(), "iq4nl", g, WithBackendName(be, kernels.Options{Threads: 2}))
		if err != nil {
			t.Fatal(err)
		}
		logits[be] = decodeIQ4(t, m)
		m.Close()
	}
	var num, den float64
	for i, want := range logits["cpu-ref"] {
		d := float64(logits["cpu"][i]) - float64(want)
		num, den = num+d*d, den+float64(want)*float64(want)
	}
	t.Logf("NMSE cpu vs cpu-ref %.3g over %d logits", num/den, len(logits["cpu"]))
	if !(num/den < 1e-3) {
		t.Errorf("NMSE cpu vs cpu-ref %.3g, want < 1e-3", num/den)
	}
}

// decodeIQ4 decodes 8 tokens on m and returns their logits, checked finite.
func decodeIQ4(t *testing.T, m *Model) []float32 {
	t.Helper()
	ctx, err := m.NewContext(ContextParams{ContextLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	var b Batch
	for i, tok := range []int32{1, 17, 42, 99, 3, 250, 7, 128} {
		b.Add(tok, int32(i), true, 0)
	}
	if err := ctx.Decode(b); err != nil {
		t.Fatal(err)
	}
	var out []float32
	for i := range 8 {
		for _, v := range ctx.Logits(i) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: logit %v at %d", m.Backend().Name(), v, i)
			}
			out = append(out, v)
		}
	}
	return out
}

// iq4NLModel is llama-tiny with every matrix in IQ4_NL, as GGUF bytes.
func iq4NLModel(t *testing.T) []byte {
	t.Helper()
	f, err := gguf.Open(testdata + "/llama-tiny-F32.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ts []tensor.Tensor
	converted := 0
	for _, w := range f.Tensors() {
		if len(w.Shape) == 2 && w.DType == tensor.F32 && w.Shape[1]%32 == 0 &&
			(w.Name == "token_embd.weight" || strings.Contains(w.Name, ".attn_") || strings.Contains(w.Name, ".ffn_")) {
			x := make([]float32, len(w.Data)/4)
			if err := tensor.Dequantize(tensor.F32, w.Data, x); err != nil {
				t.Fatal(err)
			}
			w.DType, w.Data = tensor.IQ4_NL, quantIQ4NL(x)
			converted++
		}
		ts = append(ts, w)
	}
	if converted < 8 {
		t.Fatalf("only %d matrices converted", converted)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, f.KV, ts, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
