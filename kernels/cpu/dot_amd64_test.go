//go:build amd64 && !purego

package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

// The assembly kernels against the pure-Go ones (the purego build's), at
// odd lengths: equal to float32 rounding of the sum of |terms|.
func TestAsmMatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU lacks AVX2, FMA or F16C: the assembly is not used")
	}
	r := rand.New(rand.NewPCG(3, 4))
	near := func(what string, n int, got, want, scale float32) {
		t.Helper()
		if d := math.Abs(float64(got - want)); d > 1e-5*float64(scale)+1e-30 {
			t.Errorf("%s n=%d: asm %v, go %v (|diff| %.3g, Σ|terms| %.3g)", what, n, got, want, d, scale)
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 263, 896, 1031} {
		a, x := make([]float32, n), make([]float32, n)
		h, bh := make([]uint16, n), make([]uint16, n)
		var sa, sh, sb float32
		for i := range n {
			a[i], x[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			h[i] = f16bits(float32(r.NormFloat64()))
			bh[i] = uint16(math.Float32bits(float32(r.NormFloat64())) >> 16)
			sa += float32(math.Abs(float64(a[i] * x[i])))
			sh += float32(math.Abs(float64(f16val(h[i]) * x[i])))
			sb += float32(math.Abs(float64(bf16(bh[i]) * x[i])))
		}
		near("dotF32", n, dotF32Asm(a, x), dotF32Go(a, x), sa)
		near("dotF16", n, dotF16Asm(h, x), dotF16Go(h, x), sh)
		near("dotBF16", n, dotBF16Asm(bh, x), dotBF16Go(bh, x), sb)
		y1, y2 := append([]float32(nil), x...), append([]float32(nil), x...)
		axpyF32Asm(0.75, a, y1)
		axpyF32Go(0.75, a, y2)
		for i := range y1 {
			near("axpyF32", n, y1[i], y2[i], float32(math.Abs(float64(x[i])))+float32(math.Abs(float64(0.75*a[i]))))
		}
		y1, y2 = append(y1[:0], x...), append(y2[:0], x...)
		axpyF16Asm(-1.5, h, y1)
		axpyF16Go(-1.5, h, y2)
		for i := range y1 {
			near("axpyF16", n, y1[i], y2[i], float32(math.Abs(float64(x[i])))+float32(math.Abs(float64(1.5*f16val(h[i])))))
		}
	}
}

// The vector exp and silu·u against math.Exp, at odd lengths and over
// the range the ops see (softmax weights, SwiGLU gates), clamp included.
func TestAsmExp(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 7, 8, 9, 33, 100, 1031} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 20)
		}
		if n > 3 {
			x[0], x[1], x[2] = -200, 0, 100
		}
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		expF32Asm(got)
		expF32Go(want)
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 4e-7*math.Abs(float64(want[i]))+1e-37 && !(x[i] >= 88 && got[i] > 1e38) {
				t.Errorf("exp(%v) = %v, want %v", x[i], got[i], want[i])
			}
		}
		u := make([]float32, n)
		for i := range u {
			u[i] = float32(r.NormFloat64())
		}
		g1, g2 := append([]float32(nil), x...), append([]float32(nil), x...)
		siluMulAsm(g1, u, g1)
		siluMulGo(g2, u, g2)
		for i := range g1 {
			if d := math.Abs(float64(g1[i] - g2[i])); d > 1e-6*math.Abs(float64(g2[i]))+1e-30 {
				t.Errorf("silu(%v)·%v = %v, want %v", x[i], u[i], g1[i], g2[i])
			}
		}
	}
}

// The assembly quantiser equals the Go one bitwise (the rule is exact),
// including halves, zero blocks and the ±127 ends.
func TestAsmQuantizeBitwise(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, nb := range []int{1, 2, 5, 28, 152} {
		x := make([]float32, nb*32)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()*3))
		}
		clear(x[:32]) // d = 0
		if nb > 1 {
			for i := range 32 { // x·id lands on halves: −63.5 … 63.5 scaled to amax 127
				x[32+i] = float32(i-16) + 0.5
			}
			x[63] = 127
		}
		q1, d1, s1 := make([]int8, len(x)), make([]float32, nb), make([]float32, nb)
		q2, d2, s2 := make([]int8, len(x)), make([]float32, nb), make([]float32, nb)
		quantizeQ8Asm(x, q1, d1, s1)
		quantizeQ8Go(x, q2, d2, s2)
		for i := range q1 {
			if q1[i] != q2[i] {
				t.Fatalf("nb=%d element %d (x %v): asm %d, go %d", nb, i, x[i], q1[i], q2[i])
			}
		}
		for b := range d1 {
			if math.Float32bits(d1[b]) != math.Float32bits(d2[b]) || math.Float32bits(s1[b]) != math.Float32bits(s2[b]) {
				t.Fatalf("nb=%d block %d: asm d %v s %v, go d %v s %v", nb, b, d1[b], s1[b], d2[b], s2[b])
			}
		}
	}
}

// Q4_K: the Go kernel (where weights are not packed) against the
// dequantised weight times the dequantised activations, on random blocks.
func TestQ4_KGo(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, nsb := range []int{0, 1, 2, 3, 7} {
		k := nsb * 256
		w := make([]byte, nsb*144)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for b := range nsb {
			copy(w[b*144:], []byte{0x00, 0x14, 0x00, 0x10}) // d = 2^-10, dmin = 2^-11
		}
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		qx, dx, sx := make([]int8, k), make([]float32, k/32), make([]float32, k/32)
		quantizeQ8(x, qx, dx, sx)
		deq := make([]float32, k)
		if err := tensor.Dequantize(tensor.Q4_K, w, deq); err != nil {
			t.Fatal(err)
		}
		var want, scale float64
		for i := range k {
			xq := float64(dx[i/32]) * float64(qx[i])
			want += float64(deq[i]) * xq
			scale += math.Abs(float64(deq[i]) * xq)
		}
		gof := dotQ4_KGo(w, qx, dx, sx)
		if d := math.Abs(float64(gof) - want); d > 1e-5*scale+1e-30 {
			t.Errorf("nsb=%d: go %v, dequantised product %v", nsb, gof, want)
		}
	}
}

// Q6_K: the assembly against the Go kernel, and the Go kernel against the
// dequantised weight times the dequantised activations, on random blocks.
func TestAsmQ6_K(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, nsb := range []int{0, 1, 2, 3, 7} {
		k := nsb * 256
		w := make([]byte, nsb*210)
		for i := range w {
			w[i] = byte(r.Uint32())
		}
		for b := range nsb {
			copy(w[b*210+208:], []byte{0x00, 0x14}) // d = 2^-10
		}
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		qx, dx, sx := make([]int8, k), make([]float32, k/32), make([]float32, k/32)
		quantizeQ8(x, qx, dx, sx)
		deq := make([]float32, k)
		if err := tensor.Dequantize(tensor.Q6_K, w, deq); err != nil {
			t.Fatal(err)
		}
		var want, scale float64
		for i := range k {
			xq := float64(dx[i/32]) * float64(qx[i])
			want += float64(deq[i]) * xq
			scale += math.Abs(float64(deq[i]) * xq)
		}
		got, gof := dotQ6_KAsm(w, qx, dx, sx), dotQ6_KGo(w, qx, dx, sx)
		if d := math.Abs(float64(got - gof)); d > 1e-5*scale+1e-30 {
			t.Errorf("nsb=%d: asm %v, go %v", nsb, got, gof)
		}
		if d := math.Abs(float64(gof) - want); d > 1e-5*scale+1e-30 {
			t.Errorf("nsb=%d: go %v, dequantised product %v", nsb, gof, want)
		}
	}
}

// toF16 (vcvtps2ph) against float16.Fromfloat32, bit for bit: every
// float16 value widened (exact), every float32 exponent with mantissas
// at and around each rounding point (halfway, ties to even either way,
// the subnormal and overflow edges), quiet and signalling NaNs, and
// random bit patterns; at lengths that leave the Go tail some values.
// (A one-off sweep of all 2^32 inputs agreed too.)
func TestToF16Bitwise(t *testing.T) {
	var src []float32
	for h := range 1 << 16 {
		src = append(src, float16.Frombits(uint16(h)).Float32())
	}
	for sign := range uint32(2) {
		for exp := range uint32(256) {
			for _, m := range []uint32{0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x2fff, 0x3000, 0x3001,
				0x7fe000, 0x7fefff, 0x7ff000, 0x7ff001, 0x7fffff, 0x400000, 0x400001, 0x200000, 0x000800} {
				for _, lo := range []uint32{0, 0x800, 0x7ff} { // shifted rounding points of subnormal results
					src = append(src, math.Float32frombits(sign<<31|exp<<23|(m^lo)&0x7fffff))
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 1 << 18 {
		src = append(src, math.Float32frombits(r.Uint32()))
	}
	for _, n := range []int{len(src), len(src) - 3, 7, 9} {
		got := make([]uint16, n)
		toF16(got, src[:n])
		for i, v := range src[:n] {
			if want := float16.Fromfloat32(v).Bits(); got[i] != want {
				t.Fatalf("n=%d: %#08x → %#04x, float16.Fromfloat32 %#04x", n, math.Float32bits(v), got[i], want)
			}
		}
	}
}

// TestRowsFit: the attention kernels' bounds check (its whole eights by
// minMaxI32AVX2) against a plain loop, with a negative index or the
// largest one placed in each position, around every tail length.
func TestRowsFit(t *testing.T) {
	if !hasAVX2 {
		t.Skip("CPU lacks AVX2, FMA or F16C")
	}
	const stride, hd = 10, 4
	plain := func(m []float32, idx []int32) bool {
		var top int32
		for _, j := range idx {
			if j < 0 {
				return false
			}
			top = max(top, j)
		}
		return int(top)*stride+hd <= len(m)
	}
	r := rand.New(rand.NewPCG(9, 10))
	for n := range 35 {
		for at := range max(n, 1) {
			for _, odd := range []int32{-1, -1 << 31, 50, 49, 1<<31 - 1} {
				idx := make([]int32, n)
				for i := range idx {
					idx[i] = int32(r.IntN(40))
				}
				if n > 0 {
					idx[at] = odd
				}
				m := make([]float32, 49*stride+hd) // rows 0…49 fit, 50 does not
				if got, want := rowsFit(m, idx, stride, hd), plain(m, idx); got != want {
					t.Fatalf("n=%d, %d at %d: %v, want %v (%v)", n, odd, at, got, want, idx)
				}
			}
		}
	}
}
