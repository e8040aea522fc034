package cpu

import "math"

// BF16 weights on the fast path where SIMD has AVX512_BF16: the
// activations are rounded to bfloat16 once per MatMul (to nearest even,
// toBF16) and each (weight row, activation row) pair is one VDPBF16PS
// accumulator over 16 values at a time (tilebf16_amd64.s), as llama.cpp
// multiplies BF16 weights; the values past the last 16 are added after,
// pair by pair in float32 (bf16Tail). The 4x4, 4x1 and one-pair kernels
// do the same steps per pair, so a value does not depend on the batch,
// the tiling or the threads. Its truth is kerneltest.MatMulBF16Act (the
// weight times the rounded activations in float64), not the reference's
// float32 activations: a product of bfloat16s is exact in float32, so the
// rounding of x is the one difference that matters.
type bf16Kernels struct {
	// t4x4: out[4r+c] for weight rows w + r·ws and activation rows
	// x + c·xs (k values each); t4x1: out[r] for one activation row.
	t4x4 func(w []uint16, ws int, x []uint16, xs, k int, out *[16]float32)
	t4x1 func(w []uint16, ws int, x []uint16, k int, out *[16]float32)
	one  func(w, x []uint16) float32
}

// bf16Act holds the kernels, nil where this build or CPU has none (then
// BF16 weights take dotBF16 and tileBF16x4 on float32 activations).
var bf16Act *bf16Kernels

// BF16Activations reports whether the fast path rounds activations to
// bfloat16 against BF16 weights on this CPU (AVX512_BF16).
func BF16Activations() bool { return bf16Act != nil }

// roundBF16 is f rounded to bfloat16 (nearest even; a NaN stays a NaN),
// as bits.
func roundBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40 // quiet NaN
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

func bf16f(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// bf16Tail returns s plus the products of w and x past k16, in order,
// each rounded to float32 and added.
func bf16Tail(w, x []uint16, k16 int, s float32) float32 {
	for e := k16; e < len(x); e++ {
		s += float32(bf16f(w[e]) * bf16f(x[e]))
	}
	return s
}

// matMulBF16 is matMulFast for BF16 weights with bf16Act.
func (b *Backend) matMulBF16(d, xs, wt *Tensor) {
	n, k, m := xs.Rows, xs.Cols, wt.Rows
	w := u16view(wt.Raw)
	s := &b.scratch
	s.xb = grow(s.xb, n*k)
	xb := s.xb
	b.Parallel(n, func(lo, hi int) {
		for i, v := range xs.F32[lo*k : hi*k] {
			xb[lo*k+i] = roundBF16(v)
		}
	})
	per := rowsPerTask
	if n < 4 {
		// Decode: about decodeTaskBytes per task, each thread through its
		// own part (see matMulFast).
		part := (m + b.Threads - 1) / b.Threads
		chunks := max(1, (part*2*k+decodeTaskBytes-1)/decodeTaskBytes)
		per = max(4, (part+chunks-1)/chunks+3) &^ 3
	}
	for th := range b.Threads {
		b.scratch.buf(b.Threads, th, 16)
	}
	ks := bf16Act
	b.Pool.RunRanges(m, per, func(th, j0, j1 int) {
		out := (*[16]float32)(b.scratch.work[th][:16])
		for i0 := 0; i0 < n; i0 += xTile {
			i1 := min(i0+xTile, n)
			j := j0
			if n < 4 {
				j = decodeQuarters(d.F32, m, i0, i1, j0, j1, out, func(j, q, i int) {
					ks.t4x1(w[j*k:], q*k, xb[i*k:(i+1)*k], k, out)
				})
			}
			for ; j+4 <= j1; j += 4 {
				wj := w[j*k : (j+4)*k]
				i := i0
				for ; i+4 <= i1; i += 4 {
					ks.t4x4(wj, k, xb[i*k:(i+4)*k], k, k, out)
					putTile(d.F32, m, i, j, out)
				}
				for ; i < i1; i++ {
					ks.t4x1(wj, k, xb[i*k:(i+1)*k], k, out)
					copy(d.F32[i*m+j:][:4], out[:4])
				}
			}
			for ; j < j1; j++ {
				for i := i0; i < i1; i++ {
					d.F32[i*m+j] = ks.one(w[j*k:(j+1)*k], xb[i*k:(i+1)*k])
				}
			}
		}
	})
}
