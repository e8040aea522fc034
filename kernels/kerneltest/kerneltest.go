// Package kerneltest is the conformance suite every kernels.Backend must
// pass, in the style of gonum's blas/testblas and llama.cpp's
// test-backend-ops: each op runs on random inputs of odd sizes and is
// compared with plain reference loops written here (float64 where it
// matters) by normalised mean squared error,
//
//	NMSE = Σ(got − want)² / Σ want².
//
// Thresholds: 1e-10 for exact data movement (GetRows, KVWrite of F32);
// 1e-8 for element-wise float32 ops; 5e-4 where the backend may use
// float16 storage (F16 KV cache); matmul and attention 1e-8 against a
// float64 reference on the same dequantised weights (a float32 dot
// product of a few hundred terms is good to ~1e-7 relative).
//
//	func TestCPU(t *testing.T) { kerneltest.All(t, cpu.New(0)) }
package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// All runs every op's test.
func All(t *testing.T, b kernels.Backend) {
	t.Run("GetRows", func(t *testing.T) { GetRows(t, b) })
	t.Run("MatMul", func(t *testing.T) { MatMul(t, b) })
	t.Run("MatMulBatchInvariant", func(t *testing.T) { MatMulBatchInvariant(t, b) })
	t.Run("Elementwise", func(t *testing.T) { Elementwise(t, b) })
	t.Run("RMSNorm", func(t *testing.T) { RMSNorm(t, b) })
	t.Run("RoPE", func(t *testing.T) { RoPE(t, b) })
	t.Run("KVWrite", func(t *testing.T) { KVWrite(t, b) })
	t.Run("KVShift", func(t *testing.T) { KVShift(t, b) })
	t.Run("Attention", func(t *testing.T) { Attention(t, b) })
	t.Run("Softmax", func(t *testing.T) { Softmax(t, b) })
	t.Run("Argmax", func(t *testing.T) { Argmax(t, b) })
}

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

func randn(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * scale)
	}
	return out
}

// NMSE is Σ(got − want)² / Σ want² (0 when both are all zero).
func NMSE(got []float32, want []float64) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return num
	}
	return num / den
}

func check(t *testing.T, what string, got []float32, want []float64, limit float64) {
	t.Helper()
	for i, v := range got {
		if math.IsNaN(float64(v)) != math.IsNaN(want[i]) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, v, want[i])
		}
	}
	if e := NMSE(got, want); !(e <= limit) {
		t.Fatalf("%s: NMSE %.3g > %.3g", what, e, limit)
	}
}

func f32(t *testing.T, b kernels.Backend, shape []int, data []float32) kernels.Tensor {
	t.Helper()
	x, err := b.NewTensor(tensor.F32, shape...)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		if err := b.SetF32(x, data); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func i32(t *testing.T, b kernels.Backend, data []int32) kernels.Tensor {
	t.Helper()
	x, err := b.NewTensor(tensor.I32, len(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetI32(x, data); err != nil {
		t.Fatal(err)
	}
	return x
}

func get(t *testing.T, b kernels.Backend, x kernels.Tensor, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := b.GetF32(x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// weight makes a random (rows, cols) weight of dtype dt, returning it on
// the backend and its dequantised values (the reference's view).
func weight(t *testing.T, b kernels.Backend, r *rand.Rand, dt tensor.DType, rows, cols int) (kernels.Tensor, []float32) {
	t.Helper()
	n := rows * cols
	size, err := dt.Bytes(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	if err := tensor.Quantize(dt, randn(r, n, 1), data); err != nil {
		// K-quants cannot be quantised here: random blocks with tame scales.
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		tameScales(dt, data)
	}
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{int64(rows), int64(cols)}, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, n)
	if err := tensor.Dequantize(dt, data, deq); err != nil {
		t.Fatal(err)
	}
	return w, deq
}

// tameScales sets the f16 scale fields of K-quant blocks to small values.
func tameScales(dt tensor.DType, data []byte) {
	var offs []int
	switch dt {
	case tensor.Q4_K, tensor.Q5_K:
		offs = []int{0, 2}
	case tensor.Q6_K:
		offs = []int{208}
	case tensor.Q2_K:
		offs = []int{80, 82}
	case tensor.Q3_K:
		offs = []int{108}
	}
	bb := dt.BlockBytes()
	for b := 0; b < len(data); b += bb {
		for _, o := range offs {
			data[b+o], data[b+o+1] = 0x00, 0x20 // 2^-7
		}
	}
}

var weightTypes = []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1,
	tensor.Q5_0, tensor.Q5_1, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K}

// GetRows gathers rows of tables of every weight type.
func GetRows(t *testing.T, b kernels.Backend) {
	r := rng(1)
	for _, dt := range weightTypes {
		cols := 256 + dt.BlockSize()*(1-dt.BlockSize()/256) // odd multiples where blocks allow
		w, deq := weight(t, b, r, dt, 7, cols)
		ids := []int32{6, 0, 3, 3}
		d := f32(t, b, []int{len(ids), cols}, nil)
		b.GetRows(d, w, i32(t, b, ids))
		want := make([]float64, 0, len(ids)*cols)
		for _, id := range ids {
			for _, v := range deq[int(id)*cols : (int(id)+1)*cols] {
				want = append(want, float64(v))
			}
		}
		check(t, "GetRows "+dt.String(), get(t, b, d, len(want)), want, 1e-12)
	}
}

// MatMul: dst (n, m) = x (n, k) · wᵀ for every weight type and odd sizes.
func MatMul(t *testing.T, b kernels.Backend) {
	r := rng(2)
	for _, dt := range weightTypes {
		sizes := []struct{ n, m, k int }{{1, 5, 256}, {3, 17, 512}, {17, 9, 768}}
		if dt.BlockSize() == 1 {
			sizes = append(sizes, struct{ n, m, k int }{2, 3, 263}) // a length no vector width divides
		}
		for _, sz := range sizes {
			w, deq := weight(t, b, r, dt, sz.m, sz.k)
			x := randn(r, sz.n*sz.k, 1)
			d := f32(t, b, []int{sz.n, sz.m}, nil)
			b.MatMul(d, f32(t, b, []int{sz.n, sz.k}, x), w)
			want := make([]float64, sz.n*sz.m)
			for i := 0; i < sz.n; i++ {
				for j := 0; j < sz.m; j++ {
					var s float64
					for e := 0; e < sz.k; e++ {
						s += float64(x[i*sz.k+e]) * float64(deq[j*sz.k+e])
					}
					want[i*sz.m+j] = s
				}
			}
			check(t, "MatMul "+dt.String(), get(t, b, d, len(want)), want, 1e-10)
		}
	}
}

// MatMulBatchInvariant: a row's result is bitwise the same alone and
// inside a batch of 17.
func MatMulBatchInvariant(t *testing.T, b kernels.Backend) {
	r := rng(3)
	for _, dt := range []tensor.DType{tensor.F32, tensor.Q8_0, tensor.Q4_K} {
		k, m, n := 512, 33, 17
		w, _ := weight(t, b, r, dt, m, k)
		x := randn(r, n*k, 1)
		all := f32(t, b, []int{n, m}, nil)
		b.MatMul(all, f32(t, b, []int{n, k}, x), w)
		batched := get(t, b, all, n*m)
		for _, row := range []int{0, 5, 16} {
			one := f32(t, b, []int{1, m}, nil)
			b.MatMul(one, f32(t, b, []int{1, k}, x[row*k:(row+1)*k]), w)
			alone := get(t, b, one, m)
			for j := range alone {
				if math.Float32bits(alone[j]) != math.Float32bits(batched[row*m+j]) {
					t.Fatalf("%v row %d col %d: alone %v, in batch %v", dt, row, j, alone[j], batched[row*m+j])
				}
			}
		}
	}
}

// Elementwise: Add and Mul (full and row-broadcast), SwiGLU.
func Elementwise(t *testing.T, b kernels.Backend) {
	r := rng(4)
	n, m := 5, 37
	x, y, v := randn(r, n*m, 1), randn(r, n*m, 1), randn(r, m, 1)
	for _, bc := range []bool{false, true} {
		other, oshape := y, []int{n, m}
		if bc {
			other, oshape = v, []int{m}
		}
		for _, op := range []string{"Add", "Mul"} {
			d := f32(t, b, []int{n, m}, nil)
			xa, ob := f32(t, b, []int{n, m}, x), f32(t, b, oshape, other)
			want := make([]float64, n*m)
			for i := range want {
				o := float64(other[i%len(other)])
				if op == "Add" {
					b.Add(d, xa, ob)
					want[i] = float64(x[i]) + o
				} else {
					b.Mul(d, xa, ob)
					want[i] = float64(x[i]) * o
				}
			}
			check(t, op, get(t, b, d, n*m), want, 1e-12)
		}
	}
	d := f32(t, b, []int{n, m}, nil)
	b.SwiGLU(d, f32(t, b, []int{n, m}, x), f32(t, b, []int{n, m}, y))
	want := make([]float64, n*m)
	for i := range want {
		g := float64(x[i])
		want[i] = g / (1 + math.Exp(-g)) * float64(y[i])
	}
	check(t, "SwiGLU", get(t, b, d, n*m), want, 1e-12)
}

// RMSNorm over odd widths.
func RMSNorm(t *testing.T, b kernels.Backend) {
	r := rng(5)
	for _, dim := range []int{1, 7, 896} {
		n := 3
		x, w := randn(r, n*dim, 2), randn(r, dim, 1)
		d := f32(t, b, []int{n, dim}, nil)
		b.RMSNorm(d, f32(t, b, []int{n, dim}, x), f32(t, b, []int{dim}, w), 1e-6)
		want := make([]float64, n*dim)
		for i := 0; i < n; i++ {
			var ss float64
			for _, v := range x[i*dim : (i+1)*dim] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/float64(dim)+1e-6)
			for j := 0; j < dim; j++ {
				want[i*dim+j] = float64(x[i*dim+j]) * inv * float64(w[j])
			}
		}
		check(t, "RMSNorm", get(t, b, d, n*dim), want, 1e-12)
	}
}

// refInvFreq is the frequency formula of transformers in float64.
func refInvFreq(p kernels.RoPE) []float64 {
	half := p.HeadDim / 2
	f := make([]float64, half)
	for i := range f {
		f[i] = 1 / math.Pow(p.Theta, float64(2*i)/float64(p.HeadDim))
		switch {
		case p.FreqFactors != nil:
			f[i] /= float64(p.FreqFactors[i])
		case p.Scaling == kernels.RoPEScaleLinear:
			f[i] /= p.Factor
		case p.Scaling == kernels.RoPEScaleLlama3:
			old := float64(p.OriginalMaxPositions)
			wave := 2 * math.Pi / f[i]
			switch {
			case wave < old/p.HighFreqFactor:
			case wave > old/p.LowFreqFactor:
				f[i] /= p.Factor
			default:
				s := (old/wave - p.LowFreqFactor) / (p.HighFreqFactor - p.LowFreqFactor)
				f[i] = (1-s)*f[i]/p.Factor + s*f[i]
			}
		}
	}
	return f
}

func refRotate(x []float64, pos float64, p kernels.RoPE) {
	inv := refInvFreq(p)
	half := len(inv)
	for i, f := range inv {
		c, s := math.Cos(pos*f), math.Sin(pos*f)
		a, bb := i, i+half
		if p.Style == kernels.RoPENormal {
			a, bb = 2*i, 2*i+1
		}
		x0, x1 := x[a], x[bb]
		x[a], x[bb] = x0*c-x1*s, x1*c+x0*s
	}
}

func ropeCases() []kernels.RoPE {
	factors := make([]float32, 32)
	for i := range factors {
		factors[i] = 1 + float32(i)/8
	}
	return []kernels.RoPE{
		{Style: kernels.RoPENeox, HeadDim: 64, Theta: 1e6},
		{Style: kernels.RoPENormal, HeadDim: 64, Theta: 10000},
		{Style: kernels.RoPENeox, HeadDim: 32, Theta: 10000, Scaling: kernels.RoPEScaleLinear, Factor: 4},
		{Style: kernels.RoPENeox, HeadDim: 64, Theta: 500000, Scaling: kernels.RoPEScaleLlama3, Factor: 8,
			LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64},
		{Style: kernels.RoPENormal, HeadDim: 64, Theta: 500000, FreqFactors: factors},
	}
}

// RoPE in both layouts, with each scaling.
func RoPE(t *testing.T, b kernels.Backend) {
	r := rng(6)
	for ci, p := range ropeCases() {
		n, heads := 5, 3
		dim := heads * p.HeadDim
		x := randn(r, n*dim, 1)
		pos := []int32{0, 1, 7, 100, 3000}
		xt := f32(t, b, []int{n, dim}, x)
		b.RoPE(xt, i32(t, b, pos), p)
		want := make([]float64, n*dim)
		for i := range want {
			want[i] = float64(x[i])
		}
		for i := 0; i < n; i++ {
			for h := 0; h < heads; h++ {
				refRotate(want[i*dim+h*p.HeadDim:i*dim+(h+1)*p.HeadDim], float64(pos[i]), p)
			}
		}
		// Positions up to 3000 in float32 angles: ~3000·2^-24 rad of error.
		check(t, "RoPE case "+string(rune('0'+ci)), get(t, b, xt, n*dim), want, 1e-8)
	}
}

// KVWrite into F32 and F16 caches.
func KVWrite(t *testing.T, b kernels.Backend) {
	r := rng(7)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		cells, dim := 9, 48
		cache, err := b.NewTensor(dt, cells, dim)
		if err != nil {
			t.Fatal(err)
		}
		src := randn(r, 3*dim, 1)
		where := []int32{8, 0, 4}
		b.KVWrite(cache, f32(t, b, []int{3, dim}, src), i32(t, b, where))
		want := make([]float64, cells*dim)
		for i, c := range where {
			for j := 0; j < dim; j++ {
				want[int(c)*dim+j] = float64(src[i*dim+j])
			}
		}
		limit := 1e-14
		if dt == tensor.F16 {
			limit = 1e-6 // f16 has an 11-bit significand: relative error ≤ 2^-11
		}
		check(t, "KVWrite "+dt.String(), get(t, b, cache, cells*dim), want, limit)
	}
}

// KVShift rotates chosen cache rows by their deltas.
func KVShift(t *testing.T, b kernels.Backend) {
	r := rng(8)
	p := ropeCases()[3]
	cells, kvHeads := 6, 2
	dim := kvHeads * p.HeadDim
	init := randn(r, cells*dim, 1)
	cache := f32(t, b, []int{cells, dim}, init)
	which, delta := []int32{1, 4, 5}, []int32{10, -3, 200}
	b.KVShift(cache, i32(t, b, which), i32(t, b, delta), p)
	want := make([]float64, cells*dim)
	for i := range want {
		want[i] = float64(init[i])
	}
	for i, c := range which {
		for h := 0; h < kvHeads; h++ {
			refRotate(want[int(c)*dim+h*p.HeadDim:int(c)*dim+(h+1)*p.HeadDim], float64(delta[i]), p)
		}
	}
	check(t, "KVShift", get(t, b, cache, cells*dim), want, 1e-10)
}

// Attention with GQA, a mask with holes, and a fully masked row.
func Attention(t *testing.T, b kernels.Backend) {
	r := rng(9)
	for _, c := range []struct{ n, heads, kvHeads, hd, cells int }{{1, 4, 4, 32, 5}, {3, 6, 2, 64, 11}, {4, 8, 1, 16, 17}} {
		q := randn(r, c.n*c.heads*c.hd, 1)
		kd := randn(r, c.cells*c.kvHeads*c.hd, 1)
		vd := randn(r, c.cells*c.kvHeads*c.hd, 1)
		mask := make([]float32, c.n*c.cells)
		for i := range mask {
			if r.IntN(3) == 0 {
				mask[i] = float32(math.Inf(-1))
			}
		}
		mask[0] = 0
		if c.n > 2 { // row 2 sees nothing
			for j := 0; j < c.cells; j++ {
				mask[2*c.cells+j] = float32(math.Inf(-1))
			}
		}
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		d := f32(t, b, []int{c.n, c.heads * c.hd}, nil)
		b.Attention(d, f32(t, b, []int{c.n, c.heads * c.hd}, q), f32(t, b, []int{c.cells, c.kvHeads * c.hd}, kd),
			f32(t, b, []int{c.cells, c.kvHeads * c.hd}, vd), f32(t, b, []int{c.n, c.cells}, mask), c.heads, c.kvHeads, scale)
		want := make([]float64, c.n*c.heads*c.hd)
		for i := 0; i < c.n; i++ {
			for h := 0; h < c.heads; h++ {
				kh := h / (c.heads / c.kvHeads)
				s := make([]float64, c.cells)
				mx := math.Inf(-1)
				for j := 0; j < c.cells; j++ {
					if mask[i*c.cells+j] != 0 {
						s[j] = math.Inf(-1)
						continue
					}
					var dot float64
					for e := 0; e < c.hd; e++ {
						dot += float64(q[(i*c.heads+h)*c.hd+e]) * float64(kd[(j*c.kvHeads+kh)*c.hd+e])
					}
					s[j] = dot * float64(scale)
					mx = math.Max(mx, s[j])
				}
				if math.IsInf(mx, -1) {
					continue // all masked: zeros
				}
				var sum float64
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for e := 0; e < c.hd; e++ {
					var acc float64
					for j := range s {
						acc += s[j] / sum * float64(vd[(j*c.kvHeads+kh)*c.hd+e])
					}
					want[(i*c.heads+h)*c.hd+e] = acc
				}
			}
		}
		check(t, "Attention", get(t, b, d, len(want)), want, 1e-10)
	}
}

// Softmax rows, including one of all -Inf (gives zeros).
func Softmax(t *testing.T, b kernels.Backend) {
	r := rng(10)
	n, m := 3, 29
	x := randn(r, n*m, 3)
	for j := 0; j < m; j++ {
		x[2*m+j] = float32(math.Inf(-1))
	}
	xt := f32(t, b, []int{n, m}, x)
	b.Softmax(xt)
	want := make([]float64, n*m)
	for i := 0; i < 2; i++ {
		mx := math.Inf(-1)
		for _, v := range x[i*m : (i+1)*m] {
			mx = math.Max(mx, float64(v))
		}
		var s float64
		for j := 0; j < m; j++ {
			want[i*m+j] = math.Exp(float64(x[i*m+j]) - mx)
			s += want[i*m+j]
		}
		for j := 0; j < m; j++ {
			want[i*m+j] /= s
		}
	}
	check(t, "Softmax", get(t, b, xt, n*m), want, 1e-12)
}

// Argmax, first index on ties.
func Argmax(t *testing.T, b kernels.Backend) {
	x := []float32{1, 5, 5, 2, -1, -3, -1, -2}
	d, err := b.NewTensor(tensor.I32, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.Argmax(d, f32(t, b, []int{2, 4}, x))
	got := make([]int32, 2)
	if err := b.GetI32(d, got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 || got[1] != 0 {
		t.Fatalf("Argmax %v, want [1 0]", got)
	}
}
