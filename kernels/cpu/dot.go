package cpu

import (
	"encoding/binary"
	"math"

	"github.com/x448/float16"
)

// The fast path's inner kernels. Each is a function variable that starts
// as the pure-Go version below and is replaced at init by Go assembly
// (dot_amd64.s) when the CPU has AVX2, FMA and F16C and the purego build
// tag is not set. Assembly and Go agree to float32 rounding (the
// assembly fuses multiply-adds); each is deterministic, and none depends
// on anything but its arguments, so MatMul stays batch invariant.
//
// Quantised dots take the activation row already quantised by
// quantizeQ8: qx (k) int8, dx (k/32) the block scales, sx (k/32) the
// block scales times the block sums (for Q4_1's minimum).
var (
	dotF32  = dotF32Go  // (a (n), b (n)) f32·f32
	dotF16  = dotF16Go  // (w (n) f16 bits, x (n) f32)
	dotBF16 = dotBF16Go // (w (n) bf16 bits, x (n) f32)
	axpyF32 = axpyF32Go // y += a·x, x f32
	axpyF16 = axpyF16Go // y += a·x, x f16 bits

	dotQ8_0 = dotQ8_0Go // (w row bytes, qx, dx)
	dotQ4_0 = dotQ4_0Go // (w row bytes, qx, dx)
	dotQ4_1 = dotQ4_1Go // (w row bytes, qx, dx, sx)
	dotQ4_K = dotQ4_KGo // (w row bytes, qx, dx, sx)
	dotQ6_K = dotQ6_KGo // (w row bytes, qx, dx, sx unused)

	expF32  = expF32Go  // x = exp(x) in place, float32
	siluMul = siluMulGo // dst = g/(1+exp(−g))·u (dst may be g)

	// Four activation rows (i…i+3 of qx and dx) against one weight row,
	// each bitwise equal to the one-row kernel's result: prefill's tile.
	dotQ8_0x4 = func(w []byte, qx []int8, dx []float32, i int, out *[4]float32) {
		rows4(dotQ8_0Go, 34, w, qx, dx, i, out)
	}
	dotQ4_0x4 = func(w []byte, qx []int8, dx []float32, i int, out *[4]float32) {
		rows4(dotQ4_0Go, 18, w, qx, dx, i, out)
	}
)

// dotQ4_1x4 is dotQ8_0x4's shape for Q4_1, which needs sx too.
var dotQ4_1x4 = func(w []byte, qx []int8, dx, sx []float32, i int, out *[4]float32) {
	nb := len(w) / 20
	k := nb * 32
	for r := range 4 {
		out[r] = dotQ4_1Go(w, qx[(i+r)*k:(i+r+1)*k], dx[(i+r)*nb:(i+r+1)*nb], sx[(i+r)*nb:(i+r+1)*nb])
	}
}

// Tiles: four weight rows (w[0:], w[rb:], w[2rb:], w[3rb:], nb blocks
// each) against activation rows i… of qx, dx and sx (rows of k = 32·nb).
// A 4x4 tile sets out[4r+c] to weight row r · activation row i+c, a 4x1
// tile out[r] to weight row r · activation row i. Every value is bitwise
// the one-row kernel's (dotQ8_0, dotQ4_0, dotQ4_1, dotQ4_K; Q4_K rows
// are whole super-blocks, nb a multiple of 8), so a caller may mix
// tiles and one-row calls freely. They are made of the four-row and
// one-row kernels, and serve where weights are not packed (without AVX2,
// or with the purego tag).
type tileFunc func(w []byte, rb, nb int, qx []int8, dx, sx []float32, i int, out *[16]float32)

var (
	tileQ8_0x4 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, _ []float32, i int, out *[16]float32) {
		for r := range 4 {
			dotQ8_0x4(w[r*rb:r*rb+nb*34], qx, dx, i, (*[4]float32)(out[4*r:]))
		}
	}
	tileQ4_0x4 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, _ []float32, i int, out *[16]float32) {
		for r := range 4 {
			dotQ4_0x4(w[r*rb:r*rb+nb*18], qx, dx, i, (*[4]float32)(out[4*r:]))
		}
	}
	tileQ4_1x4 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, sx []float32, i int, out *[16]float32) {
		for r := range 4 {
			dotQ4_1x4(w[r*rb:r*rb+nb*20], qx, dx, sx, i, (*[4]float32)(out[4*r:]))
		}
	}
	tileQ4_Kx4 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, sx []float32, i int, out *[16]float32) {
		k := nb * 32
		for r := range 4 {
			for c := range 4 {
				out[4*r+c] = dotQ4_K(w[r*rb:r*rb+nb/8*144], qx[(i+c)*k:(i+c+1)*k], dx[(i+c)*nb:(i+c+1)*nb], sx[(i+c)*nb:(i+c+1)*nb])
			}
		}
	}
	tileQ4_Kx1 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, sx []float32, i int, out *[16]float32) {
		for r := range 4 {
			out[r] = dotQ4_K(w[r*rb:r*rb+nb/8*144], qx[i*nb*32:(i+1)*nb*32], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
		}
	}
	tileQ8_0x1 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, _ []float32, i int, out *[16]float32) {
		for r := range 4 {
			out[r] = dotQ8_0(w[r*rb:r*rb+nb*34], qx[i*nb*32:(i+1)*nb*32], dx[i*nb:(i+1)*nb])
		}
	}
	tileQ4_0x1 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, _ []float32, i int, out *[16]float32) {
		for r := range 4 {
			out[r] = dotQ4_0(w[r*rb:r*rb+nb*18], qx[i*nb*32:(i+1)*nb*32], dx[i*nb:(i+1)*nb])
		}
	}
	tileQ4_1x1 tileFunc = func(w []byte, rb, nb int, qx []int8, dx, sx []float32, i int, out *[16]float32) {
		for r := range 4 {
			out[r] = dotQ4_1(w[r*rb:r*rb+nb*20], qx[i*nb*32:(i+1)*nb*32], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
		}
	}
)

// Half-precision prefill tiles: rows weight rows (w[0:], w[ws:], …,
// k values each, F16 or BF16 bits; rows is 4, or 3 with AVX2 and no
// AVX-512) against four activation rows (x[0:], x[xs:], x[2xs:],
// x[3xs:]): out[4r+c] = weight row r · activation row c, bitwise
// dotF16's (dotBF16's). fn is nil where there is no kernel for them
// (dot_amd64.go sets them); the caller then calls dotF16 (dotBF16) per
// pair.
type halfTile struct {
	rows int
	fn   tileHalfFunc
}

type tileHalfFunc func(w []uint16, ws int, x []float32, xs, k int, out *[16]float32)

var tileF16, tileBF16 halfTile

// tileF16x8 (nil where SIMD has none) is tileF16 against eight
// activation rows: out[4r+c] for rows c < 4, out[16+4r+c] for row 4+c,
// each bitwise dotF16; the weight rows are read once for the eight.
var tileF16x8 func(w []uint16, ws int, x []float32, xs, k int, out *[32]float32)

// tileF16x1 (nil where SIMD has none) sets out[r] for weight rows
// w + r·ws (r < 4) against one activation row x (k values), each bitwise
// dotF16: F16 decode's four weight streams.
var tileF16x1 func(w []uint16, ws int, x []float32, k int, out *[16]float32)

// tileBF16x1 is tileF16x1 for BF16 weights (AVX2 without AVX-512 only).
var tileBF16x1 func(w []uint16, ws int, x []float32, k int, out *[16]float32)

// halfAVX2 is the AVX2 set of half-precision kernels (the one-row dot,
// the four-row decode tile, the 3x4 prefill tile), kept together for
// the tests, which check it also where AVX-512 replaces it.
type halfAVX2 struct {
	dot  func(w []uint16, x []float32) float32
	t4x1 func(w []uint16, ws int, x []float32, k int, out *[16]float32)
	t3x4 halfTile
}

var f16AVX2, bf16AVX2 halfAVX2

// Attention over an F32 cache, one query head: the visible cells idx
// (rows of k and v, stride floats apart, hd = len(q) values each).
// attnScoresF32 sets out[c] = (k row idx[c])·q·scale: dotF32 per cell
// here, and in dot_amd64.go eight cells at a time in another fixed order
// (attnScoresF32x8), the same for a cell wherever it is in idx.
// attnAccF32 adds p[c]·(v row idx[c]) to acc for c in order, bitwise
// axpyF32 per cell.
//
// attnScoresF16 and attnAccF16 are the same over an F16 cache (dotF16 and
// axpyF16 per cell here; the assembly converts each K chunk exactly, so
// its scores are those of the F32 kernel on the converted rows).
var (
	attnScoresF32 = attnScoresF32Go
	attnAccF32    = attnAccF32Go
	attnScoresF16 = attnScoresF16Go
	attnAccF16    = attnAccF16Go
)

// attnScoresF16Heads sets the scores of heads query heads that share
// the cells (head h's q at q[h·hd:], its scores at out[h·os:]), each
// bitwise attnScoresF16's for that head; attnAccF16Heads adds to each
// head's acc[h·as:][:hd] with its weights p[h·ps:] as attnAccF16 does.
// The assembly converts each K and V chunk once for two or three heads
// (grouped-query attention: the heads of a group read the same rows).
var (
	attnScoresF16Heads = attnScoresF16HeadsGo
	attnAccF16Heads    = attnAccF16HeadsGo
)

// maxF32 is the largest of s (−Inf for none). A NaN may or may not be
// passed over (the assembly's VMAXPS keeps the other operand): a NaN
// score still makes its softmax NaN through its own term.
var maxF32 = maxF32Go

// toF16 stores src rounded to float16 (nearest even) in dst (as long).
var toF16 = toF16Go

// expSubSum sets x[i] = exp(x[i] − m) (the float32 difference, then
// expF32) and returns sumF64 of the results: the softmax weights and
// their sum in one pass, every value bitwise that of the three steps.
var expSubSum = expSubSumGo

func expSubSumGo(x []float32, m float32) float64 {
	for i := range x {
		x[i] -= m
	}
	expF32(x)
	return sumF64(x)
}

func toF16Go(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = float16.Fromfloat32(v).Bits()
	}
}

func maxF32Go(s []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range s {
		if v > m {
			m = v
		}
	}
	return m
}

func attnScoresF16HeadsGo(heads int, q []float32, hd int, k []uint16, idx []int32, stride int, scale float32, out []float32, os int) {
	for h := range heads {
		attnScoresF16(q[h*hd:(h+1)*hd], k, idx, stride, scale, out[h*os:h*os+len(idx)])
	}
}

func attnAccF16HeadsGo(heads int, v []uint16, idx []int32, p []float32, ps, stride int, acc []float32, hd, as int) {
	for h := range heads {
		attnAccF16(v, idx, p[h*ps:h*ps+len(idx)], stride, acc[h*as:h*as+hd])
	}
}

func attnScoresF16Go(q []float32, k []uint16, idx []int32, stride int, scale float32, out []float32) {
	hd := len(q)
	for c, j := range idx {
		at := int(j) * stride
		out[c] = dotF16(k[at:at+hd], q) * scale
	}
}

func attnAccF16Go(v []uint16, idx []int32, p []float32, stride int, acc []float32) {
	hd := len(acc)
	for c, j := range idx {
		at := int(j) * stride
		axpyF16(p[c], v[at:at+hd], acc)
	}
}

func attnScoresF32Go(q, k []float32, idx []int32, stride int, scale float32, out []float32) {
	hd := len(q)
	for c, j := range idx {
		at := int(j) * stride
		out[c] = dotF32(k[at:at+hd], q) * scale
	}
}

func attnAccF32Go(v []float32, idx []int32, p []float32, stride int, acc []float32) {
	hd := len(acc)
	for c, j := range idx {
		at := int(j) * stride
		axpyF32(p[c], v[at:at+hd], acc)
	}
}

// rows4 is a four-row kernel made of four calls of the one-row dot, for
// a weight row of blocks of size bytes.
func rows4(dot func([]byte, []int8, []float32) float32, size int, w []byte, qx []int8, dx []float32, i int, out *[4]float32) {
	nb := len(w) / size
	k := nb * 32
	for r := range 4 {
		out[r] = dot(w, qx[(i+r)*k:(i+r+1)*k], dx[(i+r)*nb:(i+r+1)*nb])
	}
}

// simd names the kernels in use ("avx2+fma+avx512vnni", "avx2+fma" or "go").
var simd = "go"

// SIMD reports which kernels the fast path uses: "avx2+fma" (Go
// assembly, quantised weights packed for the AVX2 kernels),
// "avx2+fma+avx512vnni" (packed for the VNNI kernels) or "go" (the
// pure-Go fallback: another architecture, the purego build tag, or a CPU
// without AVX2, FMA or F16C).
func SIMD() string { return simd }

func dotF32Go(a, b []float32) float32 { return dot(a, b) }

func dotF16Go(w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s [8]float32
	n := len(w) &^ 7
	for i := 0; i < n; i += 8 {
		for l := range 8 {
			s[l] += float32(float16.Frombits(w[i+l]).Float32() * x[i+l])
		}
	}
	for i := n; i < len(w); i++ {
		s[i-n] += float32(float16.Frombits(w[i]).Float32() * x[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

func expF32Go(x []float32) {
	for i, v := range x {
		x[i] = float32(math.Exp(float64(v)))
	}
}

func siluMulGo(g, u, dst []float32) {
	u, dst = u[:len(g)], dst[:len(g)]
	for i, x := range g {
		dst[i] = x / (1 + float32(math.Exp(float64(-x)))) * u[i]
	}
}

func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

func dotBF16Go(w []uint16, x []float32) float32 {
	x = x[:len(w)]
	var s [8]float32
	n := len(w) &^ 7
	for i := 0; i < n; i += 8 {
		for l := range 8 {
			s[l] += float32(bf16(w[i+l]) * x[i+l])
		}
	}
	for i := n; i < len(w); i++ {
		s[i-n] += float32(bf16(w[i]) * x[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

func axpyF32Go(a float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += float32(a * v)
	}
}

func axpyF16Go(a float32, x []uint16, y []float32) {
	y = y[:len(x)]
	for i, h := range x {
		y[i] += float32(a * float16.Frombits(h).Float32())
	}
}

func f16at(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }

// Block layouts (ggml's):
//
//	Q8_0  34 bytes: d f16, qs [32]int8             w = d·q
//	Q4_0  18 bytes: d f16, qs [16]byte             w = d·(q−8), q = low nibbles (elements 0…15), then high (16…31)
//	Q4_1  20 bytes: d f16, m f16, qs [16]byte      w = d·q + m
//
// Each block's integer dot Σ q_w·q_x is exact; the float part is
// acc += (d_w·d_x)·Σ, plus m_w·s_x for Q4_1.

func dotQ8_0Go(w []byte, qx []int8, dx []float32) float32 {
	var acc float32
	for b, d := range dx {
		blk, q := w[b*34:b*34+34], qx[b*32:b*32+32]
		var s int32
		for i, v := range q {
			s += int32(int8(blk[2+i])) * int32(v)
		}
		acc += f16at(blk) * d * float32(s)
	}
	return acc
}

func dotQ4_0Go(w []byte, qx []int8, dx []float32) float32 {
	var acc float32
	for b, d := range dx {
		blk, q := w[b*18:b*18+18], qx[b*32:b*32+32]
		var s int32
		for i := range 16 {
			s += (int32(blk[2+i]&15) - 8) * int32(q[i])
			s += (int32(blk[2+i]>>4) - 8) * int32(q[16+i])
		}
		acc += f16at(blk) * d * float32(s)
	}
	return acc
}

func dotQ4_1Go(w []byte, qx []int8, dx, sx []float32) float32 {
	var acc, mins float32
	for b, d := range dx {
		blk, q := w[b*20:b*20+20], qx[b*32:b*32+32]
		var s int32
		for i := range 16 {
			s += int32(blk[4+i]&15) * int32(q[i])
			s += int32(blk[4+i]>>4) * int32(q[16+i])
		}
		acc += f16at(blk) * d * float32(s)
		mins += f16at(blk[2:]) * sx[b]
	}
	return acc + mins
}

// Q4_K (ggml's block_q4_K, 256 values in 144 bytes):
//
//	d f16, dmin f16, scales [12]byte (eight 6-bit scales sc and eight
//	6-bit mins m, packed as get_scale_min_k4 reads them), qs [128]byte:
//	byte 32j+e holds element 64j+e (low nibble) and 64j+32+e (high).
//	w = d·sc_s·q − dmin·m_s for sub-block s = element/32.
//
// Against activations quantised per 32 (not llama.cpp's Q8_K per 256):
// Σ_s (d·sc_s)·d_x,s·Σ q_w·q_x − Σ_s (dmin·m_s)·s_x,s.

// scalesK4 unpacks the 12 scale bytes of a Q4_K block.
func scalesK4(q []byte) (sc, m [8]uint8) {
	for j := range 8 {
		if j < 4 {
			sc[j], m[j] = q[j]&63, q[j+4]&63
		} else {
			sc[j] = q[j+4]&0xf | (q[j-4]>>6)<<4
			m[j] = q[j+4]>>4 | (q[j]>>6)<<4
		}
	}
	return sc, m
}

func dotQ4_KGo(w []byte, qx []int8, dx, sx []float32) float32 {
	var acc, mins float32
	for b := range len(w) / 144 {
		blk := w[b*144 : b*144+144]
		d, dmin := f16at(blk), f16at(blk[2:])
		sc, m := scalesK4(blk[4:16])
		for s := range 8 {
			qs, shift := blk[16+32*(s/2):16+32*(s/2)+32], 4*(s%2)
			q := qx[b*256+s*32 : b*256+s*32+32]
			var isum int32
			for e, v := range q {
				isum += int32(qs[e]>>shift&15) * int32(v)
			}
			acc += d * float32(sc[s]) * dx[b*8+s] * float32(isum)
			mins += dmin * float32(m[s]) * sx[b*8+s]
		}
	}
	return acc - mins
}

// Q6_K (ggml's block_q6_K, 256 values in 210 bytes):
//
//	ql [128]byte, qh [64]byte, scales [16]int8, d f16; in each half of
//	128 values (ql, qh advanced by 64 and 32, scales by 8), value l of
//	group c (0…3, 32 values each) has low bits from ql[l + 32·(c&1)]
//	(low nibble for c < 2, high for c ≥ 2) and high bits (qh[l] >> 2c) & 3;
//	w = d·sc·(q − 32), one scale per 16 values.
//
// Group g = 4·half + c is activation block g: its dot is
// (d·d_x,g)·(sc_2g·Σ_first16 + sc_2g+1·Σ_last16), integer until the
// last product.
func dotQ6_KGo(w []byte, qx []int8, dx, _ []float32) float32 {
	var acc float32
	for b := range len(w) / 210 {
		blk := w[b*210 : b*210+210]
		d := f16at(blk[208:])
		for g := range 8 {
			h, c := g/4, g%4
			ql, qh := blk[64*h+32*(c&1):], blk[128+32*h:]
			q := qx[b*256+g*32 : b*256+g*32+32]
			var isum int32
			for half := range 2 {
				var s int32
				for l := 16 * half; l < 16*half+16; l++ {
					lo := ql[l] & 15
					if c >= 2 {
						lo = ql[l] >> 4
					}
					v := int32(lo|(qh[l]>>(2*c)&3)<<4) - 32
					s += v * int32(q[l])
				}
				isum += int32(int8(blk[192+2*g+half])) * s
			}
			acc += d * dx[b*8+g] * float32(isum)
		}
	}
	return acc
}

// quantizeQ8 (the assembly where there is some, else quantizeQ8Go)
// quantises activations; both follow the same float32 steps exactly.
var quantizeQ8 = quantizeQ8Go

// quantizeQ8Go quantises x (k, a multiple of 32) to 8 bits per block of 32,
// as llama.cpp's quantize_row_q8_0/q8_1 (reference versions) do, but with
// float32 block scales:
//
//	d = max|x| / 127,  q = round(x · (1/d)) (halves away from zero; 0 if d = 0)
//	s = d · Σ q
//
// into qx (k), dx (k/32) and sx (k/32).
func quantizeQ8Go(x []float32, qx []int8, dx, sx []float32) {
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sum int32
		q := qx[b*32 : b*32+32]
		for i, v := range blk {
			q[i] = int8(math.Round(float64(v * id)))
			sum += int32(q[i])
		}
		dx[b], sx[b] = d, d*float32(sum)
	}
}

// Dot is the fast path's float32 dot product of a and b[:len(a)] (the
// assembly where SIMD says so). `vkllm bench`'s bandwidth probe reads
// memory with it, so that the probe streams as fast as the kernels can.
func Dot(a, b []float32) float32 { return dotF32(a, b) }
