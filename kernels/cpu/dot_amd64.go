//go:build amd64 && !purego

package cpu

import (
	"golang.org/x/sys/cpu"
)

// Implemented in dot_amd64.s.

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func dotF16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotBF16AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func axpyF32AVX2(a float32, x, y *float32, n int)

//go:noescape
func axpyF16AVX2(a float32, x *uint16, y *float32, n int)

// hasAVX2 reports whether this CPU (and OS) can run the kernels.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// hasVNNI reports whether the packed kernels (packed_amd64.s: vpdpbusd
// and EVEX encodings on 256-bit vectors, registers Y16…Y31) can run.
var hasVNNI = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// hasAVX512 reports whether the F16 and BF16 tiles (tilehalf_amd64.s:
// EVEX encodings on 256-bit vectors, registers Y16…Y23) can run.
var hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW

func init() {
	if hasAVX2 {
		useAVX2()
		f16AVX2 = newHalfAVX2(dotF16x1AVX2, dotF16t4x1AVX2, dotF16t3x4AVX2, dotF16Go)
		bf16AVX2 = newHalfAVX2(dotBF16x1AVX2, dotBF16t4x1AVX2, dotBF16t3x4AVX2, dotBF16Go)
	}
	if hasAVX512 {
		// four accumulators per pair (dotF16AVX2's order)
		tileF16 = tileHalfAsm(4, dotF16t4x4Z, dotF16Go)
		tileF16x1 = tile4x1Asm(dotF16t4x1AVX512, dotF16Go)
		tileF16x8 = tileF16x8Asm
		tileBF16 = tileHalfAsm(4, dotBF16t4x4AVX512, dotBF16Go)
	} else if hasAVX2 {
		// one accumulator per pair (tilehalf_avx2_amd64.s)
		dotF16, dotBF16 = f16AVX2.dot, bf16AVX2.dot
		tileF16x1, tileBF16x1 = f16AVX2.t4x1, bf16AVX2.t4x1
		tileF16, tileBF16 = f16AVX2.t3x4, bf16AVX2.t3x4
	}
	if hasVNNI {
		useVNNI()
		usePacked(packedVNNI())
	} else if hasAVX2 {
		usePacked(packedAVX2())
	}
	if hasBF16 {
		useBF16()
	}
}

// useVNNI names the kernels: with AVX-512 VNNI the quantised weights are
// packed (packed_amd64.s, usePacked).
func useVNNI() {
	simd = "avx2+fma+avx512vnni"
}

// Implemented in tilehalf_amd64.s.

//go:noescape
func dotBF16t4x4AVX512(w *uint16, ws int, x *float32, xs int, n int, out *float32)

//go:noescape
func dotF16t4x4Z(w *uint16, ws int, x *float32, xs int, n int, out *float32)

//go:noescape
func dotF16t4x8Z(w *uint16, ws int, x *float32, xs int, n int, out *float32)

//go:noescape
func dotF16t4x1AVX512(w *uint16, ws int, x *float32, n int, out *float32)

// tileF16x8Asm wraps dotF16t4x8Z as tileHalfAsm does dotF16t4x4Z.
func tileF16x8Asm(w []uint16, ws int, x []float32, xs, k int, out *[32]float32) {
	*out = [32]float32{}
	if k == 0 {
		return
	}
	if ws < k || xs < k {
		panic("cpu: tile rows overlap")
	}
	_, _ = w[3*ws+k-1], x[7*xs+k-1]
	n := k &^ 7
	if n > 0 {
		dotF16t4x8Z(&w[0], 2*ws, &x[0], 4*xs, n, &out[0])
	}
	if n < k {
		for r := range 4 {
			for c := range 8 {
				out[16*(c/4)+4*r+c%4] += dotF16Go(w[r*ws+n:r*ws+k], x[c*xs+n:c*xs+k])
			}
		}
	}
}

// tile4x1Asm wraps a four-row decode kernel (weight rows w + r·ws,
// r < 4, against one activation row) as tileHalfAsm does a 4x4 one.
func tile4x1Asm(kernel func(w *uint16, ws int, x *float32, n int, out *float32), tail func(w []uint16, x []float32) float32) func(w []uint16, ws int, x []float32, k int, out *[16]float32) {
	return func(w []uint16, ws int, x []float32, k int, out *[16]float32) {
		*out = [16]float32{}
		if k == 0 {
			return
		}
		_, _ = w[3*ws+k-1], x[k-1]
		n := k &^ 7
		if n > 0 {
			kernel(&w[0], 2*ws, &x[0], n, &out[0])
		}
		if n < k {
			for r := range 4 {
				out[r] += tail(w[r*ws+n:r*ws+k], x[n:k])
			}
		}
	}
}

// tileHalfAsm wraps a half-precision tile kernel of rows weight rows as
// dotF16Asm (dotBF16Asm) wraps the one-row one: the kernel takes the
// whole vectors, tail the values past them, added after, pair by pair.
func tileHalfAsm(rows int, kernel func(w *uint16, ws int, x *float32, xs int, n int, out *float32), tail func(w []uint16, x []float32) float32) halfTile {
	return halfTile{rows, func(w []uint16, ws int, x []float32, xs, k int, out *[16]float32) {
		*out = [16]float32{}
		if k == 0 {
			return
		}
		if ws < k || xs < k {
			panic("cpu: tile rows overlap")
		}
		_, _ = w[(rows-1)*ws+k-1], x[3*xs+k-1]
		n := k &^ 7
		if n > 0 {
			kernel(&w[0], 2*ws, &x[0], 4*xs, n, &out[0])
		}
		if n < k {
			for r := range rows {
				for c := range 4 {
					out[4*r+c] += tail(w[r*ws+n:r*ws+k], x[c*xs+n:c*xs+k])
				}
			}
		}
	}}
}

func useAVX2() {
	simd = "avx2+fma"
	dotF32, dotF16, dotBF16 = dotF32Asm, dotF16Asm, dotBF16Asm
	axpyF32, axpyF16 = axpyF32Asm, axpyF16Asm
	expF32, siluMul = expF32Asm, siluMulAsm
	quantizeQ8 = quantizeQ8Asm
	dotQ6_K = dotQ6_KAsm
	attnScoresF32 = attnScoresAsm(attnScoresF32x8, attnScoresF32Go)
	attnAccF32 = attnAccAsm(attnAccF32AVX2, attnAccF32Go)
	attnScoresF16 = attnScoresAsm(attnScoresF16x8, attnScoresF16Go)
	attnAccF16 = attnAccAsm(attnAccF16AVX2, attnAccF16Go)
	attnScoresF16Heads, attnAccF16Heads = attnScoresF16HeadsAsm, attnAccF16HeadsAsm
	maxF32 = maxF32Asm
	toF16 = toF16Asm
	expSubSum = expSubSumAsm
}

//go:noescape
func attnScoresF32x8(q, k *float32, idx *int32, groups, stride, hd int, scale float32, out *float32)

//go:noescape
func attnAccF32AVX2(v *float32, idx *int32, p *float32, nv, stride, hd int, acc *float32)

//go:noescape
func attnScoresF16x8(q *float32, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32)

//go:noescape
func attnAccF16AVX2(v *uint16, idx *int32, p *float32, nv, stride, hd int, acc *float32)

//go:noescape
func attnScoresF16x4h3(q *float32, qs int, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32, os int)

//go:noescape
func attnScoresF16x4h2(q *float32, qs int, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32, os int)

//go:noescape
func attnAccF16h3(v *uint16, idx *int32, p *float32, ps int, nv, stride, hd int, acc *float32, as int)

//go:noescape
func attnAccF16h2(v *uint16, idx *int32, p *float32, ps int, nv, stride, hd int, acc *float32, as int)

//go:noescape
func maxF32AVX2(x *float32, n int) float32

//go:noescape
func toF16AVX2(dst *uint16, src *float32, n int)

// toF16Asm: whole eights by toF16AVX2, the rest in Go.
func toF16Asm(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	n := len(src) &^ 7
	if n > 0 {
		toF16AVX2(&dst[0], &src[0], n)
	}
	toF16Go(dst[n:], src[n:])
}

// maxF32Asm: whole eights by maxF32AVX2, the rest in Go.
func maxF32Asm(s []float32) float32 {
	n := len(s) &^ 7
	if n == 0 {
		return maxF32Go(s)
	}
	return max(maxF32AVX2(&s[0], n), maxF32Go(s[n:]))
}

// headBlock is how many of r heads left the multi-head kernels take
// next: three, or two of four, two or one.
func headBlock(r int) int {
	switch {
	case r == 4:
		return 2
	case r >= 3:
		return 3
	}
	return r
}

// attnScoresF16HeadsAsm: groups of four cells by blocks of three or two
// heads (attnScoresF16x4h3, …h2), a single head and the last cells (fewer
// than four) by attnScoresF16; the Go loop where the kernels do not
// apply. Every score is bitwise attnScoresF16's for its head.
func attnScoresF16HeadsAsm(heads int, q []float32, hd int, k []uint16, idx []int32, stride int, scale float32, out []float32, os int) {
	nv := len(idx)
	if heads < 2 || hd == 0 || hd%8 != 0 || nv < 4 || os < nv || !rowsFit(k, idx, stride, hd) {
		attnScoresF16HeadsGo(heads, q, hd, k, idx, stride, scale, out, os)
		return
	}
	_, _ = q[heads*hd-1], out[(heads-1)*os+nv-1]
	g := nv / 4
	n4 := 4 * g
	for h := 0; h < heads; {
		b := headBlock(heads - h)
		switch b {
		case 3:
			attnScoresF16x4h3(&q[h*hd], 4*hd, &k[0], &idx[0], g, stride, hd, scale, &out[h*os], 4*os)
		case 2:
			attnScoresF16x4h2(&q[h*hd], 4*hd, &k[0], &idx[0], g, stride, hd, scale, &out[h*os], 4*os)
		default:
			attnScoresF16(q[h*hd:(h+1)*hd], k, idx[:n4], stride, scale, out[h*os:h*os+n4])
		}
		h += b
	}
	if n4 < nv {
		for h := range heads {
			attnScoresF16(q[h*hd:(h+1)*hd], k, idx[n4:], stride, scale, out[h*os+n4:h*os+nv])
		}
	}
}

// attnAccF16HeadsAsm: blocks of three or two heads by attnAccF16h3 and
// …h2, a single head by attnAccF16; the Go loop where the kernels do not
// apply (hd not a multiple of 64, as for attnAccF16AVX2). Every value is
// bitwise attnAccF16's for its head.
func attnAccF16HeadsAsm(heads int, v []uint16, idx []int32, p []float32, ps, stride int, acc []float32, hd, as int) {
	nv := len(idx)
	if heads < 2 || hd == 0 || hd%64 != 0 || nv == 0 || ps < nv || as < hd || !rowsFit(v, idx, stride, hd) {
		attnAccF16HeadsGo(heads, v, idx, p, ps, stride, acc, hd, as)
		return
	}
	_, _ = p[(heads-1)*ps+nv-1], acc[(heads-1)*as+hd-1]
	for h := 0; h < heads; {
		b := headBlock(heads - h)
		switch b {
		case 3:
			attnAccF16h3(&v[0], &idx[0], &p[h*ps], 4*ps, nv, stride, hd, &acc[h*as], 4*as)
		case 2:
			attnAccF16h2(&v[0], &idx[0], &p[h*ps], 4*ps, nv, stride, hd, &acc[h*as], 4*as)
		default:
			attnAccF16(v, idx, p[h*ps:h*ps+nv], stride, acc[h*as:h*as+hd])
		}
		h += b
	}
}

// rowsFit reports whether rows idx (all ≥ 0) of a matrix of stride
// values hold hd values each inside m. The least and largest index of
// whole eights come from minMaxI32AVX2 (the check runs before every
// attention kernel call, over every visible cell).
func rowsFit[T float32 | uint16](m []T, idx []int32, stride, hd int) bool {
	var lo, hi int32
	n := len(idx) &^ 7
	if n > 0 {
		lo, hi = minMaxI32AVX2(&idx[0], n)
		lo, hi = min(lo, 0), max(hi, 0)
	}
	for _, j := range idx[n:] {
		lo, hi = min(lo, j), max(hi, j)
	}
	return lo >= 0 && int(hi)*stride+hd <= len(m)
}

//go:noescape
func minMaxI32AVX2(x *int32, n int) (lo, hi int32)

// attnScoresAsm wraps an eight-cell scores kernel (F32 or F16 rows):
// fallback where the assembly does not apply (hd not a multiple of 8,
// rows outside k), else whole groups of eight and a last group padded
// with its last cell (a cell's value does not depend on its place).
func attnScoresAsm[T float32 | uint16](kernel func(q *float32, k *T, idx *int32, groups, stride, hd int, scale float32, out *float32),
	fallback func(q []float32, k []T, idx []int32, stride int, scale float32, out []float32)) func(q []float32, k []T, idx []int32, stride int, scale float32, out []float32) {
	return func(q []float32, k []T, idx []int32, stride int, scale float32, out []float32) {
		hd := len(q)
		if hd == 0 || hd%8 != 0 || len(idx) == 0 || !rowsFit(k, idx, stride, hd) {
			fallback(q, k, idx, stride, scale, out)
			return
		}
		nv := len(idx)
		_ = out[nv-1]
		if g := nv / 8; g > 0 {
			kernel(&q[0], &k[0], &idx[0], g, stride, hd, scale, &out[0])
		}
		if r := nv % 8; r > 0 {
			var pad [8]int32
			var res [8]float32
			n := copy(pad[:], idx[nv-r:])
			for i := n; i < 8; i++ {
				pad[i] = pad[n-1]
			}
			kernel(&q[0], &k[0], &pad[0], 1, stride, hd, scale, &res[0])
			copy(out[nv-r:nv], res[:r])
		}
	}
}

// attnAccAsm wraps a weighted-sum kernel (F32 or F16 rows, hd a multiple
// of 64), with fallback elsewhere.
func attnAccAsm[T float32 | uint16](kernel func(v *T, idx *int32, p *float32, nv, stride, hd int, acc *float32),
	fallback func(v []T, idx []int32, p []float32, stride int, acc []float32)) func(v []T, idx []int32, p []float32, stride int, acc []float32) {
	return func(v []T, idx []int32, p []float32, stride int, acc []float32) {
		hd := len(acc)
		if hd == 0 || hd%64 != 0 || len(idx) == 0 || !rowsFit(v, idx, stride, hd) {
			fallback(v, idx, p, stride, acc)
			return
		}
		_ = p[len(idx)-1]
		kernel(&v[0], &idx[0], &p[0], len(idx), stride, hd, &acc[0])
	}
}

// The wrappers check lengths (the assembly trusts them) and finish the
// elements past the last whole vector in Go, in index order, added after
// the vector sum.

func dotF32Asm(a, b []float32) float32 {
	b = b[:len(a)]
	n := len(a) &^ 7
	var s float32
	if n > 0 {
		s = dotF32AVX2(&a[0], &b[0], n)
	}
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

// halfDotAsm wraps a one-row half-precision kernel (whole vectors of
// eight) with tail for the values past them, added after.
func halfDotAsm(kernel func(w *uint16, x *float32, n int) float32, tail func(w []uint16, x []float32) float32) func(w []uint16, x []float32) float32 {
	return func(w []uint16, x []float32) float32 {
		x = x[:len(w)]
		n := len(w) &^ 7
		var s float32
		if n > 0 {
			s = kernel(&w[0], &x[0], n)
		}
		if n < len(w) {
			s += tail(w[n:], x[n:])
		}
		return s
	}
}

// dotF16Asm and dotBF16Asm: four accumulators per pair (dot_amd64.s).
var (
	dotF16Asm  = halfDotAsm(dotF16AVX2, dotF16Go)
	dotBF16Asm = halfDotAsm(dotBF16AVX2, dotBF16Go)
)

func axpyF32Asm(a float32, x, y []float32) {
	y = y[:len(x)]
	n := len(x) &^ 7
	if n > 0 {
		axpyF32AVX2(a, &x[0], &y[0], n)
	}
	axpyF32Go(a, x[n:], y[n:])
}

func axpyF16Asm(a float32, x []uint16, y []float32) {
	y = y[:len(x)]
	n := len(x) &^ 7
	if n > 0 {
		axpyF16AVX2(a, &x[0], &y[0], n)
	}
	axpyF16Go(a, x[n:], y[n:])
}

//go:noescape
func expF32AVX2(x *float32, n int)

//go:noescape
func siluMulAVX2(gate, u, dst *float32, n int)

// expSubSumAVX2 sets x[i] = exp(x[i] − m) for i < n (a multiple of 8)
// as expF32AVX2 does after a float32 subtraction, and adds each result,
// widened to float64, into lanes[i mod 4] in order.
//
//go:noescape
func expSubSumAVX2(x *float32, n int, m float32, lanes *[4]float64)

// expSubSumAsm is expSubSumGo with expF32Asm's split (whole eights by
// the vector exp, the rest by math.Exp) and sumF64's order (element i
// into partial sum i mod 4 of the whole fours, the rest into the first).
func expSubSumAsm(x []float32, m float32) float64 {
	var s [4]float64
	n := len(x) &^ 7
	if n > 0 {
		expSubSumAVX2(&x[0], n, m, &s)
	}
	for i := n; i < len(x); i++ {
		x[i] -= m
	}
	expF32Go(x[n:]) // as expF32Asm's tail
	return sumF64From(s, x[n:])
}

func expF32Asm(x []float32) {
	n := len(x) &^ 7
	if n > 0 {
		expF32AVX2(&x[0], n)
	}
	expF32Go(x[n:])
}

func siluMulAsm(g, u, dst []float32) {
	u, dst = u[:len(g)], dst[:len(g)]
	n := len(g) &^ 7
	if n > 0 {
		siluMulAVX2(&g[0], &u[0], &dst[0], n)
	}
	siluMulGo(g[n:], u[n:], dst[n:])
}

//go:noescape
func quantizeQ8AVX2(x *float32, qx *int8, dx, sx *float32, nb int)

func quantizeQ8Asm(x []float32, qx []int8, dx, sx []float32) {
	nb := len(x) / 32
	if nb == 0 {
		return
	}
	_, _, _ = qx[nb*32-1], dx[nb-1], sx[nb-1]
	quantizeQ8AVX2(&x[0], &qx[0], &dx[0], &sx[0], nb)
}

//go:noescape
func dotQ6_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32

func dotQ6_KAsm(w []byte, qx []int8, dx, _ []float32) float32 {
	nsb := len(w) / 210
	if nsb == 0 {
		return 0
	}
	_, _ = qx[nsb*256-1], dx[nsb*8-1]
	return dotQ6_KAVX2(&w[0], &qx[0], &dx[0], nsb)
}

// Implemented in tilehalf_avx2_amd64.s: the F16 and BF16 kernels of
// CPUs with AVX2 but not AVX-512, one accumulator per pair (see there).

//go:noescape
func dotF16x1AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotBF16x1AVX2(w *uint16, x *float32, n int) float32

//go:noescape
func dotF16t4x1AVX2(w *uint16, ws int, x *float32, n int, out *float32)

//go:noescape
func dotBF16t4x1AVX2(w *uint16, ws int, x *float32, n int, out *float32)

//go:noescape
func dotF16t3x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)

//go:noescape
func dotBF16t3x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)

func newHalfAVX2(one func(w *uint16, x *float32, n int) float32,
	t41 func(w *uint16, ws int, x *float32, n int, out *float32),
	t34 func(w *uint16, ws int, x *float32, xs int, n int, out *float32),
	tail func(w []uint16, x []float32) float32) halfAVX2 {
	return halfAVX2{
		dot:  halfDotAsm(one, tail),
		t4x1: tile4x1Asm(t41, tail),
		t3x4: tileHalfAsm(3, t34, tail),
	}
}
