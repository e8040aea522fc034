package cpuref

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// ropeGolden is testdata/rope.golden.json, written by rope_golden.py from
// transformers' LlamaRotaryEmbedding and apply_rotary_pos_emb. Floats are
// float32 bit patterns.
type ropeGolden struct {
	Versions map[string]string
	Cases    []struct {
		Theta   float64
		HeadDim int `json:"head_dim"`
		Scaling map[string]any
		InvFreq []int32 `json:"inv_freq"`
		Pos     []int32
		Q       []int32 // (len(Pos), 2·HeadDim)
		Rotated []int32 // Q rotated
	}
}

func fromBits(b []int32) []float32 {
	f := make([]float32, len(b))
	for i, v := range b {
		f[i] = math.Float32frombits(uint32(v))
	}
	return f
}

// ulps is the distance between two positive finite float32 in units in
// the last place.
func ulps(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	return max(d, -d)
}

// TestRoPEMatchesTransformers checks InvFreq and RoPE (Neox layout, as HF)
// against transformers in float32, with and without linear and llama3
// scaling, at positions up to 131071. torch's cosf and sinf (SLEEF,
// ≤ 1 ulp) are not always correctly rounded while Go's float64 math
// rounded once is, so the rotated values may differ by an ulp or two.
func TestRoPEMatchesTransformers(t *testing.T) {
	raw, err := os.ReadFile("testdata/rope.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g ropeGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	t.Logf("golden from %v", g.Versions)
	b := New(1)
	for _, c := range g.Cases {
		p := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: c.HeadDim, Theta: c.Theta}
		switch c.Scaling["rope_type"] {
		case "linear":
			p.Scaling, p.Factor = kernels.RoPEScaleLinear, c.Scaling["factor"].(float64)
		case "llama3":
			p.Scaling, p.Factor = kernels.RoPEScaleLlama3, c.Scaling["factor"].(float64)
			p.LowFreqFactor = c.Scaling["low_freq_factor"].(float64)
			p.HighFreqFactor = c.Scaling["high_freq_factor"].(float64)
			p.OriginalMaxPositions = int(c.Scaling["original_max_position_embeddings"].(float64))
		}
		want := fromBits(c.InvFreq)
		var worst int64
		for i, f := range p.InvFreq() {
			worst = max(worst, ulps(f, want[i]))
		}
		// Bitwise here. (Not everywhere: for theta 1e6 and head dim 128,
		// torch's powf is 1 ulp off at i = 37; such a frequency then moves
		// the rotation at position 131071 by ~1e-3.)
		if worst != 0 {
			t.Errorf("%v: InvFreq is %d ulp from transformers' inv_freq", c.Scaling, worst)
		}

		q := fromBits(c.Q) // (len(Pos), 2·HeadDim)
		x, err := b.NewTensor(tensor.F32, len(c.Pos), 2*c.HeadDim)
		if err != nil {
			t.Fatal(err)
		}
		pos, err := b.NewTensor(tensor.I32, len(c.Pos))
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(b.SetF32(x, q), b.SetI32(pos, c.Pos)); err != nil {
			t.Fatal(err)
		}
		b.RoPE(x, pos, p)
		got := make([]float32, len(q))
		if err := b.GetF32(x, got); err != nil {
			t.Fatal(err)
		}
		// Positions reach 131071: an angle not rounded to float32 as
		// transformers rounds it would be off by up to 0.004 rad.
		var maxErr, maxQ float64
		for i, v := range fromBits(c.Rotated) {
			maxErr = max(maxErr, math.Abs(float64(got[i])-float64(v)))
			maxQ = max(maxQ, math.Abs(float64(q[i])))
		}
		ulp := maxQ * 0x1p-23
		t.Logf("%v: inv_freq within %d ulp, rotation within %.2f ulp of max|q|", c.Scaling, worst, maxErr/ulp)
		if maxErr > 2*ulp {
			t.Errorf("%v: rotated q is %.3g from transformers' (%.1f ulp of max|q| %.3g)", c.Scaling, maxErr, maxErr/ulp, maxQ)
		}
	}
}

// RoPE keeps the last call's angles (ropeCache): a call with other
// positions (of the same count), another theta or other frequency
// factors, or back to the first ones must rotate exactly as a fresh
// backend does.
func TestRoPETableReuse(t *testing.T) {
	const n, hd = 5, 16
	p1 := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: hd, Theta: 10000}
	p2 := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: hd, Theta: 500000}
	ff := []float32{1, 1, 2, 2, 4, 4, 8, 8}
	p3 := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: hd, Theta: 10000, FreqFactors: ff}
	p4 := p3
	p4.FreqFactors = slices.Clone(ff)
	p4.FreqFactors[7] = 9
	a, c := []int32{0, 1, 2, 3, 4}, []int32{7, 1, 2, 3, 90000}
	q := make([]float32, n*2*hd)
	for i := range q {
		q[i] = float32(i%13) - 6.5
	}
	rotated := func(b *Backend, pos []int32, p kernels.RoPE) []float32 {
		x, _ := b.NewTensor(tensor.F32, n, 2*hd)
		pt, _ := b.NewTensor(tensor.I32, n)
		if err := errors.Join(b.SetF32(x, q), b.SetI32(pt, pos)); err != nil {
			t.Fatal(err)
		}
		b.RoPE(x, pt, p)
		got := make([]float32, len(q))
		if err := b.GetF32(x, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	b := New(2)
	for i, step := range []struct {
		pos []int32
		p   kernels.RoPE
	}{{a, p1}, {a, p1}, {c, p1}, {a, p2}, {a, p1}, {a, p3}, {a, p4}, {a, p3}} {
		got, want := rotated(b, step.pos, step.p), rotated(New(1), step.pos, step.p)
		for e := range got {
			if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
				t.Fatalf("call %d (positions %v, theta %v): value %d is %v, a fresh backend's %v", i, step.pos, step.p.Theta, e, got[e], want[e])
			}
		}
	}
}
