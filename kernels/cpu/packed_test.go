package cpu

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// The packed kernels (packed_amd64.s) against packed8Go, the same
// arithmetic written out in Go, and the four-row kernel against the
// one-row kernel: every value bitwise equal, at odd block counts, row
// counts that leave a group part empty, zero scales and a zero activation
// block.
//
// Every set of kernels this CPU can run is tested (with AVX-512 VNNI,
// the AVX2 set too, which it does not use).
func TestPackedKernelsBitwise(t *testing.T) {
	sets := packedSets()
	if len(sets) == 0 {
		t.Skipf("this build (kernels %s) has no packed kernels; weights are not packed", SIMD())
	}
	for _, set := range sets {
		t.Run(set.name, func(t *testing.T) { testPackedSet(t, set) })
	}
}

func testPackedSet(t *testing.T, set packedSet) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dt := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q5_0, tensor.Q5_1, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS} {
		x1, x4 := set.kernels(dt)
		if set.name == "avx512vnni" && (x1 == nil || (set.pairs(dt) == nil) != (dt == tensor.Q8_0 || dt == tensor.Q4_1)) {
			t.Errorf("%v: the VNNI set lacks its packed kernels (one- and four-row: %v, two-group: %v)", dt, x1 != nil, set.pairs(dt) != nil)
		}
		if x1 == nil {
			t.Logf("%v: no kernels in this set", dt)
			continue
		}
		nbs := []int{1, 2, 3, 7, 24, 33, 64}
		if packValues(dt) == 256 {
			nbs = []int{1, 2, 3, 5, 8} // super-blocks of 256
		}
		for _, nb := range nbs {
			for _, rows := range []int{1, 8, 13, 29, 77} {
				k, nx := nb*packValues(dt), 13
				nd := k / 32 // activation blocks
				x := make([]float32, nx*k)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				clear(x[2*k : 2*k+32]) // a zero activation block: d_x = 0
				qx, dx, sx := make([]int8, nx*k), make([]float32, nx*nd), make([]float32, nx*nd)
				quantizeQ8(x, qx, dx, sx)
				neg := make([]int32, nx*k/negValues(dt))
				negSums(qx, set.negOff(dt), neg)
				rb := dt.BlockBytes() * nb
				raw := make([]byte, rows*rb)
				src := make([]float32, k)
				for row := range rows {
					for i := range src {
						src[i] = float32(r.NormFloat64()) * float32(row+1)
					}
					if row == 1 {
						clear(src[:32]) // a zero weight block: d_w = 0
					}
					wr := raw[row*rb : (row+1)*rb]
					switch dt {
					case tensor.Q4_K, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS:
						// random blocks with f16 d (and Q4_K's dmin)
						// 2^-10·(row+1): every scale and value
						// (tensor.Quantize lacks these; TestPackedLlamaCpp
						// takes the reference's)
						for i := range wr {
							wr[i] = byte(r.Uint32())
						}
						dOff := 0
						if dt == tensor.Q6_K {
							dOff = 208
						}
						for blk := 0; blk < len(wr); blk += dt.BlockBytes() {
							wr[blk+dOff], wr[blk+dOff+1] = 0, 0x14+byte(row)
							if dt == tensor.Q4_K || dt == tensor.Q5_K {
								wr[blk+2], wr[blk+3] = 0, 0x14
							}
							if dt == tensor.IQ4_XS && row == 0 {
								// scales −32 (sub-block 0) and 31 (1)
								wr[blk+2], wr[blk+3], wr[blk+4] = 0b1100, 0, 0xf0
							}
						}
						if row == 1 && dt != tensor.Q4_K && dt != tensor.Q5_K {
							wr[dOff], wr[dOff+1] = 0, 0 // a zero weight block: d = 0
						}
						if dt == tensor.Q6_K && row == 0 {
							// the extreme scales −128 and 127, and every
							// value of the first group 0 or 63
							wr[192], wr[193] = 0x80, 0x7f
							for e := range 32 {
								wr[e] = []byte{0, 0xff}[e%2]
								wr[128+e] = []byte{0, 0xff}[e%2]
							}
						}
					default:
						if err := tensor.Quantize(dt, src, wr); err != nil {
							t.Fatal(err)
						}
					}
					if dt == tensor.Q8_0 && row == 2 {
						// the extreme weights −128 and 127 (a Q8_0 file may
						// hold −128 though quantising never makes it)
						for e := 2; e < 34; e++ {
							wr[e] = []byte{0x80, 0x7f}[e%2]
						}
					}
				}
				groups := (rows + 7) / 8
				gb := nb * packBlockBytes(dt)
				pk := make([]byte, groups*gb)
				pack8(dt, raw, rows, rb, nb, pk, 0, groups)
				for g := range groups {
					w := pk[g*gb : (g+1)*gb]
					for i := range nx {
						var want [8]float32
						packed8Go(dt, w, nb, qx[i*k:(i+1)*k], dx[i*nd:(i+1)*nd], sx[i*nd:(i+1)*nd], &want)
						var got [8]float32
						x1(w, nb, qx, dx, sx, neg, i, 1, got[:])
						for lane := range 8 {
							if math.Float32bits(got[lane]) != math.Float32bits(want[lane]) {
								t.Errorf("%v nb=%d rows=%d group %d lane %d, activation row %d: x1 %v, Go %v", dt, nb, rows, g, lane, i, got[lane], want[lane])
							}
							if 8*g+lane >= rows && got[lane] != 0 {
								t.Errorf("%v nb=%d rows=%d: padding lane %d gives %v", dt, nb, rows, lane, got[lane])
							}
						}
					}
					// x4 by one and two quads, at the least stride and a
					// wider one whose gaps must stay as they were
					for _, tc := range []struct{ i, n, os int }{{0, 4, 8}, {3, 4, 8}, {0, 8, 8}, {3, 8, 11}} {
						got := nanSlice(tc.n * tc.os)
						x4(w, nb, qx, dx, sx, neg, tc.i, tc.n, got, tc.os)
						for c := range tc.n {
							var want [8]float32
							x1(w, nb, qx, dx, sx, neg, tc.i+c, 1, want[:])
							for lane := range tc.os {
								v := got[c*tc.os+lane]
								if lane >= 8 {
									if !math.IsNaN(float64(v)) {
										t.Errorf("%v nb=%d rows=%d group %d: x4 rows %d+%d stride %d wrote %v between output rows", dt, nb, rows, g, tc.i, tc.n, tc.os, v)
									}
								} else if math.Float32bits(v) != math.Float32bits(want[lane]) {
									t.Errorf("%v nb=%d rows=%d group %d lane %d, activation row %d: x4 (rows %d+%d, stride %d) %v, x1 %v", dt, nb, rows, g, lane, tc.i+c, tc.i, tc.n, tc.os, v, want[lane])
								}
							}
						}
					}
				}
				// x16 (two groups at once) against x4 on each, by one and
				// two quads, at the least stride and a wider one
				if x16 := set.pairs(dt); x16 != nil {
					for g := 0; g+2 <= groups; g++ {
						for _, tc := range []struct{ i, n, os int }{{0, 4, 16}, {3, 4, 16}, {0, 8, 16}, {3, 8, 19}, {1, 12, 17}} {
							got := nanSlice(tc.n * tc.os)
							x16(pk[g*gb:(g+2)*gb], gb, nb, qx, dx, sx, neg, tc.i, tc.n, got, tc.os)
							want := nanSlice(tc.n * tc.os)
							x4(pk[g*gb:(g+1)*gb], nb, qx, dx, sx, neg, tc.i, tc.n, want, tc.os)
							x4(pk[(g+1)*gb:(g+2)*gb], nb, qx, dx, sx, neg, tc.i, tc.n, want[8:], tc.os)
							for e := range got {
								if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
									t.Errorf("%v nb=%d rows=%d groups %d, %d: x16 (rows %d+%d, stride %d) [%d] = %v, x4 %v", dt, nb, rows, g, g+1, tc.i, tc.n, tc.os, e, got[e], want[e])
								}
							}
						}
					}
				}
				// x1 over all the groups at once against one group at a
				// time, writing nothing past its outputs
				for i := range nx {
					got := nanSlice(8*groups + 3)
					x1(pk, nb, qx, dx, sx, neg, i, groups, got)
					for g := range groups {
						var want [8]float32
						x1(pk[g*gb:(g+1)*gb], nb, qx, dx, sx, neg, i, 1, want[:])
						for lane := range 8 {
							if v := got[8*g+lane]; math.Float32bits(v) != math.Float32bits(want[lane]) {
								t.Errorf("%v nb=%d rows=%d activation row %d, group %d lane %d: x1 over %d groups %v, alone %v", dt, nb, rows, i, g, lane, groups, v, want[lane])
							}
						}
					}
					for _, v := range got[8*groups:] {
						if !math.IsNaN(float64(v)) {
							t.Errorf("%v nb=%d rows=%d: x1 over %d groups wrote %v past its outputs", dt, nb, rows, groups, v)
						}
					}
				}
				// The packed values are the quantised dot product (the
				// float64 one of the dequantised weight and activations)
				// to float32 rounding.
				deq := make([]float32, rows*k)
				if err := tensor.Dequantize(dt, raw, deq); err != nil {
					t.Fatal(err)
				}
				for row := range rows {
					var got [8]float32
					x1(pk[row/8*gb:(row/8+1)*gb], nb, qx, dx, sx, neg, 0, 1, got[:])
					var want, mag float64
					for e := range k {
						p := float64(deq[row*k+e]) * float64(dx[e/32]) * float64(qx[e])
						want += p
						mag += math.Abs(p)
					}
					if d := math.Abs(float64(got[row%8]) - want); d > 1e-5*mag+1e-30 {
						t.Errorf("%v nb=%d row %d: %v, float64 %v (|diff| %g, Σ|p| %g)", dt, nb, row, got[row%8], want, d, mag)
					}
				}
			}
		}
	}
}

// MatMuls (kernels.MultiMatMul): every output bitwise MatMul's on its own
// weight, for weights packed alike (one pool job over all their groups),
// weights of mixed dtypes (one MatMul each), row counts that leave a
// group part full, in decode and prefill.
func TestMatMulsBitwise(t *testing.T) {
	const k = 256
	{
		for _, dts := range [][]tensor.DType{
			{tensor.Q4_0, tensor.Q4_0, tensor.Q4_0},
			{tensor.Q8_0, tensor.Q8_0},
			{tensor.Q4_1, tensor.Q4_1},
			{tensor.Q4_K, tensor.Q4_K, tensor.Q4_K},
			{tensor.IQ4_NL, tensor.IQ4_NL},
			{tensor.IQ4_XS, tensor.IQ4_XS, tensor.IQ4_XS},
			{tensor.Q4_0, tensor.Q6_K, tensor.F16},
			{tensor.IQ4_XS, tensor.IQ4_NL, tensor.Q4_K},
			{tensor.Q5_0, tensor.Q5_0},
			{tensor.Q6_K, tensor.Q6_K, tensor.Q5_0},
			{tensor.Q5_K, tensor.Q5_K},
			{tensor.Q5_1, tensor.Q5_1},
		} {
			rows := []int{40, 13, 8}
			for _, n := range []int{1, 3, 4, 9} {
				be := New(2)
				var ws, got, want []kernels.Tensor
				for i, dt := range dts {
					w, _ := upload(t, be, dt, rows[i], k)
					g, _ := be.NewTensor(tensor.F32, n, rows[i])
					h, _ := be.NewTensor(tensor.F32, n, rows[i])
					ws, got, want = append(ws, w), append(got, g), append(want, h)
				}
				xs := make([]float32, n*k)
				r := rand.New(rand.NewPCG(uint64(n), 3))
				for i := range xs {
					xs[i] = float32(r.NormFloat64())
				}
				x, _ := be.NewTensor(tensor.F32, n, k)
				if err := be.SetF32(x, xs); err != nil {
					t.Fatal(err)
				}
				be.MatMuls(got, x, ws)
				for i := range ws {
					be.MatMul(want[i], x, ws[i])
					a, b := make([]float32, n*rows[i]), make([]float32, n*rows[i])
					if err := be.GetF32(got[i], a); err != nil {
						t.Fatal(err)
					}
					if err := be.GetF32(want[i], b); err != nil {
						t.Fatal(err)
					}
					for e := range a {
						if math.Float32bits(a[e]) != math.Float32bits(b[e]) {
							t.Fatalf("%v n=%d: weight %d (%v) value %d: MatMuls %v, MatMul %v", dts, n, i, dts[i], e, a[e], b[e])
						}
					}
				}
				be.Close()
			}
		}
	}
}

// nanSlice returns n NaNs: outputs a kernel must overwrite, or leave.
func nanSlice(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// negSums equals the plain loop on random blocks and on blocks of all
// −128, all 127 and alternating extremes, by 32 values and (Q6_K) by 16.
func TestNegSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const nb = 40
	qx := make([]int8, 32*nb)
	for i := range qx {
		qx[i] = int8(rng.IntN(256) - 128)
	}
	for i := range 32 {
		qx[i], qx[32+i], qx[64+i] = -128, 127, int8(127-255*(i%2))
	}
	for _, off := range []int32{8, 128, 1, 32} {
		n := nb
		if off == 32 { // Q6_K's: blocks of 16
			n = 2 * nb
		}
		got, want := make([]int32, n), make([]int32, n)
		negSums(qx, off, got)
		negSumsGo(qx, off, want)
		vals := len(qx) / n
		for j := range got {
			var s int32
			for _, v := range qx[vals*j : vals*(j+1)] {
				s += int32(v)
			}
			if got[j] != want[j] || want[j] != -off*s {
				t.Fatalf("off %d block %d: %d, want %d", off, j, got[j], want[j])
			}
		}
	}
}

// Prefill against decode: each row of a MatMul over n activation rows
// (the two-group and 4x8 tiles, then the four-row and one-row kernels for
// the rows left) bitwise the same row multiplied alone (decode's
// kernels), for weights of an odd number of full groups and a short one,
// at one thread and two.
func TestPrefillMatchesDecode(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.Q4_K, tensor.Q8_0, tensor.Q4_1, tensor.F16, tensor.Q5_0, tensor.Q5_1, tensor.Q5_K, tensor.Q6_K, tensor.IQ4_NL, tensor.IQ4_XS} {
		for _, threads := range []int{1, 2} {
			be := New(threads)
			k, m := 512, 43 // five full groups of eight and three rows
			w, _ := upload(t, be, dt, m, k)
			r := rand.New(rand.NewPCG(uint64(dt), uint64(threads)))
			for _, n := range []int{8, 21} {
				xs := make([]float32, n*k)
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
				x1, _ := be.NewTensor(tensor.F32, 1, k)
				d1, _ := be.NewTensor(tensor.F32, 1, m)
				alone := make([]float32, m)
				for i := range n {
					if err := be.SetF32(x1, xs[i*k:(i+1)*k]); err != nil {
						t.Fatal(err)
					}
					be.MatMul(d1, x1, w)
					if err := be.GetF32(d1, alone); err != nil {
						t.Fatal(err)
					}
					for j := range m {
						if math.Float32bits(got[i*m+j]) != math.Float32bits(alone[j]) {
							t.Errorf("%v threads=%d n=%d: [%d, %d] = %v, alone %v", dt, threads, n, i, j, got[i*m+j], alone[j])
						}
					}
				}
			}
			be.Close()
		}
	}
}

// TestPackedReferenceVectors: the blocks of testdata/quant
// (tools/make_quant_vectors.py) of the dtypes packed since the IQ4 and
// Q5_0/Q6_K kernels, packed, give through every packed kernel set the dot
// product of the values llama.cpp's reference (gguf.quants.dequantize)
// gives them with the activations, to float32 rounding.
func TestPackedReferenceVectors(t *testing.T) {
	sets := packedSets()
	for _, c := range []struct {
		dt          tensor.DType
		rows, bytes int
	}{{tensor.IQ4_NL, 4, 288}, {tensor.IQ4_XS, 8, 2176}, {tensor.Q5_0, 4, 352}, {tensor.Q6_K, 8, 3360}, {tensor.Q5_K, 8, 2816}, {tensor.Q5_1, 4, 384}} {
		elems := c.bytes / c.dt.BlockBytes() * c.dt.BlockSize()
		file, err := os.ReadFile(filepath.Join("../../testdata/quant", c.dt.String()+".deq.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if len(file) != c.bytes+4*elems {
			t.Fatalf("%v: %d bytes, want %d", c.dt, len(file), c.bytes+4*elems)
		}
		raw, deq := file[:c.bytes], make([]float32, elems)
		for i := range deq {
			deq[i] = math.Float32frombits(binary.LittleEndian.Uint32(file[c.bytes+4*i:]))
		}
		k := elems / c.rows
		rb, nb, nd := c.bytes/c.rows, k/packValues(c.dt), k/32
		groups := (c.rows + 7) / 8
		pk := make([]byte, groups*nb*packBlockBytes(c.dt))
		pack8(c.dt, raw, c.rows, rb, nb, pk, 0, groups)
		r := rand.New(rand.NewPCG(5, 6))
		const nx = 3
		x := make([]float32, nx*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		qx, dx, sx := make([]int8, nx*k), make([]float32, nx*nd), make([]float32, nx*nd)
		quantizeQ8(x, qx, dx, sx)
		for _, set := range sets {
			x1, _ := set.kernels(c.dt)
			if x1 == nil {
				if set.name == "avx512vnni" {
					t.Errorf("%v: the VNNI set lacks its packed kernels", c.dt)
				}
				continue
			}
			neg := make([]int32, nx*k/negValues(c.dt))
			negSums(qx, set.negOff(c.dt), neg)
			for i := range nx {
				got := make([]float32, 8*groups)
				x1(pk, nb, qx, dx, sx, neg, i, groups, got)
				for row := range c.rows {
					var want, mag float64
					for e := range k {
						p := float64(deq[row*k+e]) * float64(dx[i*nd+e/32]) * float64(qx[i*k+e])
						want += p
						mag += math.Abs(p)
					}
					if d := math.Abs(float64(got[row]) - want); d > 1e-5*mag+1e-30 {
						t.Errorf("%s %v row %d, activation row %d: %v, llama.cpp's values %v (|diff| %g, Σ|p| %g)", set.name, c.dt, row, i, got[row], want, d, mag)
					}
				}
			}
		}
	}
}
