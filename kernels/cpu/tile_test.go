package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/tensor"
)

// The tile kernels (assembly where SIMD says so, else the defaults made
// of the four-row and one-row kernels) against the one-row kernels, at
// odd block counts and row strides (rows padded past their blocks): every
// value bitwise equal. The one-row kernels are checked against the
// pure-Go reference elsewhere (TestAsmMatchesGo, the kerneltest suite).
func TestTilesBitwise(t *testing.T) {
	t.Logf("kernels: %s", SIMD())
	r := rand.New(rand.NewPCG(7, 8))
	for _, nb := range []int{1, 2, 3, 7, 8, 24, 28, 33, 40} {
		k, nx := nb*32, 7
		x := make([]float32, nx*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		x[3] = 0 // a zero block scale somewhere is fine too
		qx, dx, sx := make([]int8, nx*k), make([]float32, nx*nb), make([]float32, nx*nb)
		quantizeQ8(x, qx, dx, sx)
		for _, c := range []struct {
			dt     tensor.DType
			t4, t1 tileFunc
			one    func(w []byte, qx []int8, dx, sx []float32) float32
		}{
			{tensor.Q8_0, tileQ8_0x4, tileQ8_0x1, func(w []byte, qx []int8, dx, _ []float32) float32 { return dotQ8_0(w, qx, dx) }},
			{tensor.Q4_0, tileQ4_0x4, tileQ4_0x1, func(w []byte, qx []int8, dx, _ []float32) float32 { return dotQ4_0(w, qx, dx) }},
			{tensor.Q4_1, tileQ4_1x4, tileQ4_1x1, dotQ4_1},
			{tensor.Q4_K, tileQ4_Kx4, tileQ4_Kx1, dotQ4_K},
		} {
			if c.dt == tensor.Q4_K && nb%8 != 0 {
				continue // rows of whole 256-value super-blocks only
			}
			size := c.dt.BlockBytes() * 32 / c.dt.BlockSize() // bytes per 32 values
			for _, pad := range []int{0, 5} {
				rb := nb*size + pad
				w := make([]byte, 4*rb)
				for row := range 4 {
					src := make([]float32, k)
					for i := range src {
						src[i] = float32(r.NormFloat64()) * float32(row+1)
					}
					wr := w[row*rb : row*rb+nb*size]
					if c.dt == tensor.Q4_K {
						// random super-blocks with f16 d and dmin 2^-10·(row+1)
						for i := range wr {
							wr[i] = byte(r.Uint32())
						}
						for blk := 0; blk < len(wr); blk += 144 {
							wr[blk], wr[blk+1], wr[blk+2], wr[blk+3] = 0, 0x14+byte(row), 0, 0x14
						}
					} else if err := tensor.Quantize(c.dt, src, wr); err != nil {
						t.Fatal(err)
					}
				}
				want := func(row, i int) float32 {
					return c.one(w[row*rb:row*rb+nb*size], qx[i*k:(i+1)*k], dx[i*nb:(i+1)*nb], sx[i*nb:(i+1)*nb])
				}
				check := func(kind string, row, i int, got float32) {
					t.Helper()
					if wv := want(row, i); math.Float32bits(got) != math.Float32bits(wv) {
						t.Errorf("%v nb=%d pad=%d %s: weight row %d, activation row %d: tile %v, one-row %v", c.dt, nb, pad, kind, row, i, got, wv)
					}
				}
				for _, i := range []int{0, 3} {
					var out [16]float32
					c.t4(w, rb, nb, qx, dx, sx, i, &out)
					for row := range 4 {
						for col := range 4 {
							check("4x4", row, i+col, out[4*row+col])
						}
					}
				}
				for _, i := range []int{0, 6} {
					var out [16]float32
					c.t1(w, rb, nb, qx, dx, sx, i, &out)
					for row := range 4 {
						check("4x1", row, i, out[row])
					}
				}
			}
		}
	}
}

// The attention kernels (assembly where SIMD says so): each score the
// same bits wherever its cell is in the list and within float32 rounding
// of the float64 dot; the weighted sum bitwise per-cell axpyF32 calls; at
// head sizes the assembly takes (multiples of 8 and 64) and others it
// leaves to Go.
func TestAttnKernelsBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, hd := range []int{4, 8, 32, 64, 96, 128} {
		for _, nv := range []int{1, 3, 8, 17, 40} {
			const cells = 40
			stride := 3*hd + 8
			k, v := make([]float32, cells*stride), make([]float32, cells*stride)
			for i := range k {
				k[i], v[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			q, p := make([]float32, hd), make([]float32, nv)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			idx := make([]int32, nv)
			for c := range idx {
				idx[c] = int32(r.IntN(cells))
				p[c] = r.Float32()
			}
			off := hd + 3
			got := make([]float32, nv)
			attnScoresF32(q, k[off:], idx, stride, 0.125, got)
			// A score is the same wherever its cell is in the list (the
			// assembly goes by eight cells, the last group padded): the
			// list reversed and rotated gives each cell the same bits.
			for _, perm := range []func(c int) int{
				func(c int) int { return nv - 1 - c },
				func(c int) int { return (c + 3) % nv },
			} {
				idx2, got2 := make([]int32, nv), make([]float32, nv)
				for c := range idx {
					idx2[perm(c)] = idx[c]
				}
				attnScoresF32(q, k[off:], idx2, stride, 0.125, got2)
				for c := range idx {
					if math.Float32bits(got2[perm(c)]) != math.Float32bits(got[c]) {
						t.Errorf("hd=%d nv=%d: cell %d scores %v at place %d, %v at %d", hd, nv, idx[c], got[c], c, got2[perm(c)], perm(c))
					}
				}
			}
			// And it is the float32 dot to float32 rounding (the Go
			// fallback is dotF32 itself; the assembly sums in another
			// order).
			for c, j := range idx {
				at := int(j)*stride + off
				var want, mag float64
				for e := range hd {
					want += float64(k[at+e]) * float64(q[e])
					mag += math.Abs(float64(k[at+e]) * float64(q[e]))
				}
				want *= 0.125
				if d := math.Abs(float64(got[c]) - want); d > 1e-6*mag {
					t.Errorf("hd=%d nv=%d: score %d = %v, float64 %v (Σ|p| %g)", hd, nv, c, got[c], want, mag)
				}
			}
			// Over an F16 cache: each score is the F32 kernel's on the
			// rows converted (exactly) to float32 (the assembly), and the
			// weighted sum bitwise per-cell axpyF16 calls.
			kh, vh := make([]uint16, len(k)), make([]uint16, len(v))
			kc := make([]float32, len(k))
			for i := range k {
				kh[i], vh[i] = f16bits(k[i]), f16bits(v[i])
				kc[i] = float16.Frombits(kh[i]).Float32()
			}
			gotH, wantH := make([]float32, nv), make([]float32, nv)
			attnScoresF16(q, kh[off:], idx, stride, 0.125, gotH)
			attnScoresF32(q, kc[off:], idx, stride, 0.125, wantH)
			for c := range idx {
				if hd%8 != 0 || !hasAVX2 {
					break // the Go fallbacks: dotF16 and dotF32 per cell, which differ
				}
				if math.Float32bits(gotH[c]) != math.Float32bits(wantH[c]) {
					t.Errorf("hd=%d nv=%d: F16 score %d = %v, F32 kernel on the converted row %v", hd, nv, c, gotH[c], wantH[c])
				}
			}
			accH, accHWant := make([]float32, hd), make([]float32, hd)
			for e := range accH {
				accH[e], accHWant[e] = float32(e), float32(e)
			}
			attnAccF16(vh[off:], idx, p, stride, accH)
			for c, j := range idx {
				at := int(j)*stride + off
				axpyF16(p[c], vh[at:at+hd], accHWant)
			}
			for e := range accH {
				if math.Float32bits(accH[e]) != math.Float32bits(accHWant[e]) {
					t.Errorf("hd=%d nv=%d: F16 acc[%d] = %v, per-cell axpyF16 %v", hd, nv, e, accH[e], accHWant[e])
				}
			}
			accGot, accWant := make([]float32, hd), make([]float32, hd)
			for e := range accGot {
				accGot[e] = float32(e)
				accWant[e] = float32(e)
			}
			attnAccF32(v[off:], idx, p, stride, accGot)
			for c, j := range idx {
				at := int(j)*stride + off
				axpyF32(p[c], v[at:at+hd], accWant)
			}
			for e := range accGot {
				if math.Float32bits(accGot[e]) != math.Float32bits(accWant[e]) {
					t.Errorf("hd=%d nv=%d: acc[%d] = %v, per-cell axpyF32 %v", hd, nv, e, accGot[e], accWant[e])
				}
			}
		}
	}
}

// maxF32 (the softmax's max; assembly where SIMD says so) against the
// Go loop at every length up to 40, the largest value at every place,
// and all −Inf.
func TestMaxF32(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for n := range 41 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.NormFloat64())
		}
		for at := range n {
			s2 := append([]float32(nil), s...)
			s2[at] = 100
			if got := maxF32(s2); got != 100 {
				t.Errorf("n=%d: largest at %d: maxF32 %v, want 100", n, at, got)
			}
		}
		if got, want := maxF32(s), maxF32Go(s); got != want {
			t.Errorf("n=%d: maxF32 %v, Go %v", n, got, want)
		}
		for i := range s {
			s[i] = float32(math.Inf(-1))
		}
		if got := maxF32(s); !math.IsInf(float64(got), -1) {
			t.Errorf("n=%d all −Inf: maxF32 %v", n, got)
		}
	}
}

// The multi-head attention kernels over an F16 cache (grouped-query
// attention: several query heads on the same cells): every score and
// weighted sum bitwise the one-head kernels' for its head, for one to
// seven heads, cell counts around the four-cell groups, head sizes the
// assembly takes (multiples of 8; of 64 for the sums) and others.
func TestAttnHeadsBitwise(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, hd := range []int{8, 24, 64, 96, 128} {
		for _, nv := range []int{1, 3, 4, 5, 8, 13, 40} {
			for heads := 1; heads <= 7; heads++ {
				const cells = 40
				stride := 2*hd + 8
				k, v := make([]uint16, cells*stride), make([]uint16, cells*stride)
				for i := range k {
					k[i], v[i] = f16bits(float32(r.NormFloat64())), f16bits(float32(r.NormFloat64()))
				}
				idx := make([]int32, nv)
				for c := range idx {
					idx[c] = int32(r.IntN(cells))
				}
				q := make([]float32, heads*hd)
				for i := range q {
					q[i] = float32(r.NormFloat64())
				}
				os, as, off := nv+5, hd+8, hd+3
				got, p := make([]float32, heads*os), make([]float32, heads*os)
				for i := range p {
					p[i] = r.Float32()
				}
				acc := make([]float32, heads*as)
				for i := range acc {
					acc[i] = float32(i % 7)
				}
				want := append([]float32(nil), acc...)
				attnScoresF16Heads(heads, q, hd, k[off:], idx, stride, 0.125, got, os)
				attnAccF16Heads(heads, v[off:], idx, p, os, stride, acc, hd, as)
				for h := range heads {
					one := make([]float32, nv)
					attnScoresF16(q[h*hd:(h+1)*hd], k[off:], idx, stride, 0.125, one)
					for c := range nv {
						if g := got[h*os+c]; math.Float32bits(g) != math.Float32bits(one[c]) {
							t.Errorf("hd=%d nv=%d heads=%d: head %d cell %d score %v, one-head %v", hd, nv, heads, h, c, g, one[c])
						}
					}
					attnAccF16(v[off:], idx, p[h*os:h*os+nv], stride, want[h*as:h*as+hd])
				}
				for i := range acc {
					if math.Float32bits(acc[i]) != math.Float32bits(want[i]) {
						t.Errorf("hd=%d nv=%d heads=%d: acc[%d] = %v, one-head %v", hd, nv, heads, i, acc[i], want[i])
					}
				}
			}
		}
	}
}

// The F16 and BF16 tiles (where SIMD has them) against dotF16 and
// dotBF16 per pair: bitwise equal, at lengths of whole 32-chunks, 8-chunks
// past them and values past those, with rows padded past their values.
func TestHalfTilesBitwise(t *testing.T) {
	bf16bits := func(v float32) uint16 { return uint16(math.Float32bits(v) >> 16) }
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		name string
		tile halfTile
		t4x1 func(w []uint16, ws int, x []float32, k int, out *[16]float32)
		one  func(w []uint16, x []float32) float32
		bits func(float32) uint16
	}{
		{"F16", tileF16, tileF16x1, dotF16, f16bits},
		{"BF16", tileBF16, tileBF16x1, dotBF16, bf16bits},
		// the AVX2 set, also where AVX-512 kernels replace it
		{"F16/avx2", f16AVX2.t3x4, f16AVX2.t4x1, f16AVX2.dot, f16bits},
		{"BF16/avx2", bf16AVX2.t3x4, bf16AVX2.t4x1, bf16AVX2.dot, bf16bits},
	} {
		if c.tile.fn == nil {
			t.Logf("%s: no tile kernel (%s)", c.name, SIMD())
			continue
		}
		for _, k := range []int{1, 7, 8, 24, 32, 40, 61, 96, 136, 899, 1024, 2109, 4103} {
			for _, pad := range []int{0, 3} {
				ws, xs := k+pad, k+2*pad
				w, x := make([]uint16, 3*ws+k), make([]float32, 3*xs+k)
				for i := range w {
					w[i] = c.bits(float32(r.NormFloat64()))
				}
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				if c.name == "F16" && tileF16x8 != nil {
					// the eight-activation-row tile
					x8 := make([]float32, 7*xs+k)
					for i := range x8 {
						x8[i] = float32(r.NormFloat64())
					}
					var out8 [32]float32
					tileF16x8(w, ws, x8, xs, k, &out8)
					for row := range 4 {
						for col := range 8 {
							want := c.one(w[row*ws:row*ws+k], x8[col*xs:col*xs+k])
							if got := out8[16*(col/4)+4*row+col%4]; math.Float32bits(got) != math.Float32bits(want) {
								t.Errorf("F16 4x8 k=%d pad=%d: weight row %d, activation row %d: tile %v, one-row %v", k, pad, row, col, got, want)
							}
						}
					}
				}
				var out [16]float32
				c.tile.fn(w, ws, x, xs, k, &out)
				for row := range c.tile.rows {
					for col := range 4 {
						want := c.one(w[row*ws:row*ws+k], x[col*xs:col*xs+k])
						if got := out[4*row+col]; math.Float32bits(got) != math.Float32bits(want) {
							t.Errorf("%s k=%d pad=%d: weight row %d, activation row %d: tile %v, one-row %v", c.name, k, pad, row, col, got, want)
						}
					}
				}
				if c.t4x1 != nil {
					// The decode tile: four weight rows by one activation row.
					for col := range 4 {
						c.t4x1(w, ws, x[col*xs:col*xs+k], k, &out)
						for row := range 4 {
							want := c.one(w[row*ws:row*ws+k], x[col*xs:col*xs+k])
							if got := out[row]; math.Float32bits(got) != math.Float32bits(want) {
								t.Errorf("%s 4x1 k=%d pad=%d: weight row %d, activation row %d: tile %v, one-row %v", c.name, k, pad, row, col, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// The fast MatMul of F16 and BF16 weights: every value bitwise the
// one-row kernel's (dotF16, dotBF16) on its pair, at row lengths with
// and without a tail of values past the last eight, and activation and
// weight row counts that leave tiles part full (decode and prefill).
func TestFastHalfMatMulBitwise(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16} {
		if dt == tensor.BF16 && BF16Activations() {
			t.Log("BF16: activations rounded to bfloat16 on this CPU (bf16act_test.go)")
			continue
		}
		for _, k := range []int{40, 512, 1037, 2072} {
			for _, n := range []int{1, 4, 9} {
				be := New(0)
				m := 10
				w, data := upload(t, be, dt, m, k)
				xs := make([]float32, n*k)
				r := rand.New(rand.NewPCG(uint64(k), uint64(n)))
				for i := range xs {
					xs[i] = float32(r.NormFloat64())
				}
				x, _ := be.NewTensor(tensor.F32, n, k)
				d, _ := be.NewTensor(tensor.F32, n, m)
				if err := be.SetF32(x, xs); err != nil {
					t.Fatal(err)
				}
				be.MatMul(d, x, w)
				got := make([]float32, n*m)
				if err := be.GetF32(d, got); err != nil {
					t.Fatal(err)
				}
				hw := u16view(data)
				one := dotF16
				if dt == tensor.BF16 {
					one = dotBF16
				}
				for i := range n {
					for j := range m {
						want := one(hw[j*k:(j+1)*k], xs[i*k:(i+1)*k])
						if math.Float32bits(got[i*m+j]) != math.Float32bits(want) {
							t.Errorf("%v k=%d n=%d: [%d, %d] = %v, one-row %v", dt, k, n, i, j, got[i*m+j], want)
						}
					}
				}
				be.Close()
			}
		}
	}
}
