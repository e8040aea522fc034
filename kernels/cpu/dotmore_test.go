package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// moreTypes are dotmore.go's weight dtypes.
var moreTypes = []tensor.DType{tensor.IQ4_NL, tensor.IQ4_XS, tensor.Q5_0, tensor.Q5_1, tensor.Q5_K, tensor.Q3_K, tensor.Q2_K}

// TestUploadTakesMoreDTypes: the dtypes of the downloaded files that
// dotmore.go serves upload and take the fast kernel, not the dequantising
// path.
func TestUploadTakesMoreDTypes(t *testing.T) {
	b := New(1)
	defer b.Close()
	for _, dt := range moreTypes {
		upload(t, b, dt, 2, 256)
		if q8Dot(dt) == nil {
			t.Errorf("%v: no fast kernel", dt)
		}
	}
}

// BenchmarkMatMulMore compares, for dotmore.go's dtypes and Q6_K, the
// packed kernels where the set in use packs the dtype ("packed": IQ4_NL
// and IQ4_XS with AVX-512 VNNI), the unpacked fast path ("tile":
// activations quantised, q8Dot's kernel, and in prefill moreTile's
// tiles), the one-row kernels alone ("rows": the fast path before the
// tiles) and the path they replace ("generic": each weight row
// dequantised, then the F32 dot), on Qwen2.5-0.5B's FFN up (4864,
// 896) and down (896, 4864) projections (K-quants: up (4864, 1024),
// whole super-blocks), for n = 1 (decode), 64 and 512 activation rows.
// The paths alternate within one run:
//
//	go test -run '^$' -bench 'MatMulMore/Q5_K/down/n=64' -count 3 ./kernels/cpu/
func BenchmarkMatMulMore(b *testing.B) {
	for _, dt := range append(moreTypes[:len(moreTypes):len(moreTypes)], tensor.Q6_K) {
		for _, shape := range []struct {
			name string
			m, k int
		}{{"up", 4864, 896}, {"down", 896, 4864}} {
			m, k := shape.m, shape.k
			if dt.BlockSize() == 256 && k%256 != 0 {
				k = 1024
			}
			for _, n := range []int{1, 64, 512} {
				for _, path := range []string{"packed", "tile", "rows", "generic"} {
					if n == 1 && path == "rows" {
						continue // decode has no tile
					}
					if x1, _ := packedKernels(dt); path == "packed" && x1 == nil {
						continue
					}
					b.Run(fmt.Sprintf("%v/%s/n=%d/%s", dt, shape.name, n, path), func(b *testing.B) {
						be := New(0)
						defer be.Close()
						if path != "packed" { // the weight not packed
							defer usePacked(packed)
							usePacked(packedSet{name: "none"})
						}
						w, data := upload(b, be, dt, m, k)
						x, _ := be.NewTensor(tensor.F32, n, k)
						d, _ := be.NewTensor(tensor.F32, n, m)
						xt, dt2, wt := x.(*Tensor), d.(*Tensor), w.(*Tensor)
						if path == "rows" {
							defer func(t func([]byte, []float32, []int8, int, []float32, int, *[4]float32)) { q8Tile4 = t }(q8Tile4)
							q8Tile4 = nil
						}
						for b.Loop() {
							if path == "generic" {
								be.matMulDequant(dt2, xt, wt)
							} else {
								be.matMulFast(dt2, xt, wt)
							}
						}
						sec := b.Elapsed().Seconds() / float64(b.N)
						b.ReportMetric(2*float64(n*m*k)/sec/1e9, "GFLOP/s")
						b.ReportMetric(float64(len(data))/sec/1e9, "GB/s")
					})
				}
			}
		}
	}
}

// moreCase is one of dotmore.go's types: its Go kernel and the byte
// offsets of its f16 scales (set to small values, the rest random).
type moreCase struct {
	dt     tensor.DType
	goDot  func(w []byte, qx []int8, dx, sx []float32) float32
	halves []int
}

var moreCases = []moreCase{
	{tensor.IQ4_NL, dotIQ4_NLGo, []int{0}},
	{tensor.IQ4_XS, dotIQ4_XSGo, []int{0}},
	{tensor.Q5_0, dotQ5_0Go, []int{0}},
	{tensor.Q5_1, dotQ5_1Go, []int{0, 2}},
	{tensor.Q5_K, dotQ5_KGo, []int{0, 2}},
	{tensor.Q3_K, dotQ3_KGo, []int{108}},
	{tensor.Q2_K, dotQ2_KGo, []int{80, 82}},
}

// moreRow is a random row of blocks blocks of c.dt (scales 2^-10 … 2^-9)
// and random activations quantised by quantizeQ8, with the exact
// dequantised product Σ w·d_x·q_x (float64) and Σ|w·d_x·q_x|.
func moreRow(t *testing.T, r *rand.Rand, c moreCase, blocks int) (w []byte, qx []int8, dx, sx []float32, want, scale float64) {
	t.Helper()
	bb, k := c.dt.BlockBytes(), blocks*c.dt.BlockSize()
	w = make([]byte, blocks*bb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := range blocks {
		for _, o := range c.halves {
			w[b*bb+o], w[b*bb+o+1] = byte(r.Uint32()), 0x14|byte(r.Uint32()&3)
		}
	}
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	qx, dx, sx = make([]int8, k), make([]float32, k/32), make([]float32, k/32)
	quantizeQ8(x, qx, dx, sx)
	deq := make([]float32, k)
	if err := tensor.Dequantize(c.dt, w, deq); err != nil {
		t.Fatal(err)
	}
	for i := range k {
		p := float64(deq[i]) * float64(dx[i/32]) * float64(qx[i])
		want += p
		scale += math.Abs(p)
	}
	return w, qx, dx, sx, want, scale
}

// TestDotMoreGo: each Go kernel of dotmore.go against the dequantised
// weight times the dequantised activations (float64), within float32
// rounding of the sum of magnitudes.
func TestDotMoreGo(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 2))
	for _, c := range moreCases {
		for _, blocks := range []int{0, 1, 2, 3, 7} {
			w, qx, dx, sx, want, scale := moreRow(t, r, c, blocks)
			if got := c.goDot(w, qx, dx, sx); math.Abs(float64(got)-want) > 1e-5*scale+1e-30 {
				t.Errorf("%v, %d blocks: go %v, dequantised product %v", c.dt, blocks, got, want)
			}
		}
	}
}

// TestDotMoreKernel: the kernel in use (q8Dot: the assembly where there
// is some) against the Go kernel, and bitwise the same on a second call
// and inside a longer row (its order depends on nothing else).
func TestDotMoreKernel(t *testing.T) {
	t.Logf("kernels: %s", SIMD())
	r := rand.New(rand.NewPCG(41, 3))
	for _, c := range moreCases {
		for _, blocks := range []int{0, 1, 2, 3, 7, 40} {
			w, qx, dx, sx, _, scale := moreRow(t, r, c, blocks)
			got, gof := q8Dot(c.dt)(w, qx, dx, sx), c.goDot(w, qx, dx, sx)
			if math.Abs(float64(got-gof)) > 1e-5*scale+1e-30 {
				t.Errorf("%v, %d blocks: kernel %v, go %v", c.dt, blocks, got, gof)
			}
			if again := q8Dot(c.dt)(slices.Clone(w), qx, dx, sx); math.Float32bits(again) != math.Float32bits(got) {
				t.Errorf("%v, %d blocks: %v then %v", c.dt, blocks, got, again)
			}
		}
	}
}
