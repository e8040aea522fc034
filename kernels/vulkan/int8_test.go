//go:build cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// int8DTypes are shaders.Int8Types as dtypes.
func int8DTypes(t testing.TB) []tensor.DType {
	var out []tensor.DType
	for _, n := range shaders.Int8Types {
		dt, ok := tensor.ParseDType(n)
		if !ok {
			t.Fatalf("Int8Types: %q", n)
		}
		out = append(out, dt)
	}
	return out
}

// TestInt8MatMul: in the int8 mode, MatMul of every Int8Types weight is
// the quantised arithmetic of kerneltest.MatMulQ8 (activations quantised
// by its rule, the exactly dequantised weight, float64 sums; only float32
// rounding of the block sums allowed: LimitF32Dot), with bitwise batch
// invariance, through the integer dot products where the device has them
// and through plain int arithmetic; the float weight types keep the
// float kernels' strict limits (kerneltest.MatMulNotQ8, once: Q5_0, Q5_1,
// Q2_K and Q3_K stay on the float kernels too, but MatMulNotQ8 skips
// them); and the fused GateUpSwiGLU is bitwise the mode's MatMul, MatMul,
// SwiGLU on every type.
func TestInt8MatMul(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"int8dot", Config{Int8: true}}, {"int8", Config{Int8: true, NoIntegerDot: true}}, {"int8_noSubgroups", Config{Int8: true, NoSubgroups: true}}} {
		t.Run(c.name, func(t *testing.T) {
			b := openTest(t, c.cfg)
			if d := b.Device(); !d.Int8MatMul {
				t.Fatalf("Int8 asked for, Int8MatMul off: %+v", d)
			}
			defer checkClean(t, b)
			kerneltest.MatMulQ8Types(t, b, int8DTypes(t))
			if c.name == "int8_noSubgroups" {
				return // the same kernels as "int8dot" but for the reduction
			}
			t.Run("GateUpSwiGLU", func(t *testing.T) { kerneltest.GateUpSwiGLU(t, b) })
			if c.name == "int8dot" {
				t.Run("MatMulNotQ8", func(t *testing.T) { kerneltest.MatMulNotQ8(t, b) })
			}
		})
	}
}

// int8Run returns x (n, k) · wᵀ (m rows) from b.
func int8Run(t *testing.T, b *Backend, w *Tensor, x []float32, n, k, m int) []float32 {
	return coopRun(t, b, w, x, n, k, m)
}

// TestInt8Invariance: with the int8 mode on, a token's result does not
// depend on the batch it is in, its place in it, the chunking of a
// prompt, the tuning's knobs (every candidate of matvec_int8 and
// matvec_int8_batch that TestSweepCandidates covers, run directly) or the
// integer dot (the instruction or plain ints): a 40-token product equals,
// bitwise, each token alone and chunks of it, on every Int8Types dtype.
// (The reduction, subgroup or shared memory, is the device's: fixed for
// all kernels, as in the float mode.)
func TestInt8Invariance(t *testing.T) {
	b := openTest(t, Config{Int8: true})
	plain := openTest(t, Config{Int8: true, NoIntegerDot: true})
	if !b.Device().IntegerDot {
		t.Logf("device without shaderIntegerDotProduct: both run plain int arithmetic")
	}
	const n, m = 40, 37
	chunks := [][2]int{{0, 1}, {0, 7}, {7, 23}, {23, 40}, {16, 17}, {39, 40}}
	for _, dt := range int8DTypes(t) {
		t.Run(dt.String(), func(t *testing.T) {
			k := 4608 // 144 groups of 32, 18 K-quant blocks: several steps of every bpi, the last partial
			w, raw := kerneltest.RandomWeight(t, b, dt, m, k)
			wp, err := plain.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{m, int64(k)}, Data: raw})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(13, uint64(dt)))
			x := make([]float32, n*k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			all := int8Run(t, b, w.(*Tensor), x, n, k, m)
			same := func(what string, got []float32, lo int) {
				t.Helper()
				for i, v := range got {
					if want := all[lo*m+i]; math.Float32bits(v) != math.Float32bits(want) {
						t.Fatalf("%v: %s: element %d = %v, the batch of %d %v", dt, what, i, v, n, want)
					}
				}
			}
			same("plain ints", int8Run(t, plain, wp.(*Tensor), x, n, k, m), 0)
			for _, p := range chunks {
				same("tokens alone "+shapeRange(p), int8Run(t, b, w.(*Tensor), x[p[0]*k:p[1]*k], p[1]-p[0], k, m), p[0])
			}
			// Every covered candidate of both families, directly.
			name, _ := b.int8Name(dt)
			for _, fam := range []string{"matvec_int8", "matvec_int8_batch"} {
				for _, kn := range Families[fam].Candidates() {
					if !coveringSet(kn) {
						continue
					}
					for _, p := range [][2]int{{0, 1}, {0, n}} {
						same(fam+" "+kn.String()+" "+shapeRange(p), int8Knobs(t, b, name, kn, w.(*Tensor), x[p[0]*k:p[1]*k], p[1]-p[0], k, m), p[0])
					}
				}
			}
		})
	}
	checkClean(t, b)
	checkClean(t, plain)
}

func shapeRange(p [2]int) string { return fmt.Sprintf("tokens %d…%d", p[0], p[1]-1) }

// int8Knobs runs the int8 kernel with knobs kn.
func int8Knobs(t *testing.T, b *Backend, name string, kn Knobs, w *Tensor, x []float32, n, k, m int) []float32 {
	t.Helper()
	xt, err := b.NewTensor(tensor.F32, n, k)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(xt)
	d, err := b.NewTensor(tensor.F32, n, m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(d)
	if err := b.SetF32(xt, x); err != nil {
		t.Fatal(err)
	}
	b.int8Matvec(name, kn, d.(*Tensor), xt.(*Tensor), w)
	out := make([]float32, n*m)
	if err := b.GetF32(d, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInt8Detect: the mode is off by default and on with Config.Int8 or
// VKLLM_VULKAN_INT8=1, off again with VKLLM_VULKAN_DISABLE=int8; in it
// MatMul takes the int8 kernel for exactly the Int8Types (the _int8dot
// variants where the device has integer dot products), and GateUpSwiGLU
// runs for them and the float types alike (kerneltest.GateUpSwiGLU checks
// it bitwise against the mode's MatMul, MatMul, SwiGLU).
func TestInt8Detect(t *testing.T) {
	if d := openTest(t, Config{}).Device(); d.Int8MatMul {
		t.Errorf("Config{}: Int8MatMul on (want off by default)")
	}
	t.Setenv("VKLLM_VULKAN_INT8", "1")
	cfg, err := FromEnv(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := openTest(t, cfg)
	if !b.Device().Int8MatMul {
		t.Fatalf("VKLLM_VULKAN_INT8=1: Int8MatMul off")
	}
	t.Logf("IntegerDot %v", b.Device().IntegerDot)
	for _, dt := range WeightDTypes() {
		name, ok := b.int8Variant(dt)
		want := "matmul_" + typeName(dt) + "_f32_int8"
		if b.Device().IntegerDot {
			want += "dot"
		}
		if in := slices.Contains(shaders.Int8Types, dt.String()); ok != in || ok && name != b.reduceVariant(want) {
			t.Errorf("%v: int8 variant %q %v, want %v", dt, name, ok, in)
		}
	}
	x, _ := b.NewTensor(tensor.F32, 1, 256)
	d, _ := b.NewTensor(tensor.F32, 1, 8)
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.F16} {
		w, _ := kerneltest.RandomWeight(t, b, dt, 8, 256)
		if !b.GateUpSwiGLU(d, x, w, w) {
			t.Errorf("%v: GateUpSwiGLU declines in the int8 mode", dt)
		}
	}
	t.Setenv("VKLLM_VULKAN_DISABLE", "int8")
	if cfg, err = FromEnv(Config{}); err != nil {
		t.Fatal(err)
	}
	if d := openTest(t, cfg).Device(); d.Int8MatMul {
		t.Errorf("VKLLM_VULKAN_DISABLE=int8: Int8MatMul on")
	}
	checkClean(t, b)
}

// TestInt8Requantize: MatMuls of one input share its quantisation (one
// quantising dispatch for three weights), and a write to the input (an
// upload, a kernel writing it) makes the next MatMul quantise it again:
// its result is bitwise a fresh tensor's of the same values.
func TestInt8Requantize(t *testing.T) {
	b := openTest(t, Config{Int8: true})
	const n, k, m = 3, 256, 19
	r := rand.New(rand.NewPCG(17, 1))
	vals := func() []float32 {
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	w, _ := kerneltest.RandomWeight(t, b, tensor.Q4_0, m, k)
	w2, _ := kerneltest.RandomWeight(t, b, tensor.Q8_0, m, k)
	x, err := b.NewTensor(tensor.F32, n, k)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := b.NewTensor(tensor.F32, n, m)
	get := func() []float32 {
		out := make([]float32, n*m)
		if err := b.GetF32(d, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	check := func(what string, xv []float32) {
		t.Helper()
		runs := b.q8runs
		b.MatMul(d, x, w)
		got := get()
		if b.q8runs != runs+1 {
			t.Errorf("%s: %d quantisations, want 1", what, b.q8runs-runs)
		}
		want := int8Run(t, b, w.(*Tensor), xv, n, k, m)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d = %v, a fresh input's %v", what, i, got[i], want[i])
			}
		}
	}
	x1 := vals()
	if err := b.SetF32(x, x1); err != nil {
		t.Fatal(err)
	}
	check("first", x1)
	runs := b.q8runs // check's fresh tensor was quantised last
	b.MatMul(d, x, w)
	b.MatMul(d, x, w2)
	b.MatMul(d, x, w)
	if b.q8runs != runs+1 {
		t.Errorf("three MatMuls of an unwritten input: %d quantisations, want 1", b.q8runs-runs)
	}
	x2 := vals()
	if err := b.SetF32(x, x2); err != nil {
		t.Fatal(err)
	}
	check("after an upload", x2)
	y, _ := b.NewTensor(tensor.F32, n, k)
	if err := b.SetF32(y, vals()); err != nil {
		t.Fatal(err)
	}
	b.Add(x, x, y)
	x3 := make([]float32, n*k)
	if err := b.GetF32(x, x3); err != nil {
		t.Fatal(err)
	}
	check("after Add wrote it", x3)
	checkClean(t, b)
}
