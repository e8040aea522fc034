//go:build cgo

package vulkan

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// openCoop opens the backend in its default configuration, where MatMul
// runs the cooperative-matrix kernel if the device has it. On a device without VK_KHR_cooperative_matrix the test is skipped
// with what it needs, or fails where VKLLM_REQUIRE_COOPMAT=1 (make test
// sets it when it runs these tests on tools/lavapipe-coopmat.sh's
// lavapipe), so that a skip is never counted as a pass there.
func openCoop(t *testing.T, cfg Config) *Backend {
	t.Helper()
	b := openDevice(t, cfg)
	if d := b.Device(); !d.CoopMat {
		msg := "device without the cooperative-matrix kernel (needs VK_KHR_cooperative_matrix with 16x16x16 f16 products: " +
			"go test -exec \"$VKLLM_COOP_EXEC\" after eval \"$(tools/lavapipe-coopmat.sh | tail -n1)\")"
		if os.Getenv("VKLLM_REQUIRE_COOPMAT") == "1" {
			t.Fatalf("%s; device %+v", msg, d)
		}
		t.Skipf("%s; device %+v", msg, d)
	}
	return b
}

// TestCoopDetect: the device's shapes are reported; the kernel runs by
// default unless disabled (Config.NoCoopMat, VKLLM_VULKAN_DISABLE=coopmat);
// with it on, every MatMul of a CoopTypes weight takes it, a decode step
// included, and F32 weights keep the exact kernels.
func TestCoopDetect(t *testing.T) {
	b := openCoop(t, Config{})
	d := b.Device()
	t.Logf("cooperative-matrix shapes: %v", d.CoopShapes)
	if !slices.Contains(d.CoopShapes, d.CoopShape+" f16*f16+f32=f32") {
		t.Errorf("CoopMat on with shape %q, not among the f16 ones listed: %v", d.CoopShape, d.CoopShapes)
	}
	for _, dt := range WeightDTypes() {
		name, ok := b.coopVariant(dt)
		if want := slices.Contains(shaders.CoopTypes, dt.String()); ok != want || ok && name != "matmul_coop_"+typeName(dt)+"_f32" {
			t.Errorf("%v: coop variant %q %v, want %v", dt, name, ok, want)
		}
	}
	if _, ok := b.coopVariant(tensor.F32); ok {
		t.Error("F32 weights on the cooperative-matrix kernel")
	}
	if d := openDevice(t, Config{NoCoopMat: true}).Device(); d.CoopMat || !d.CoopMatDevice {
		t.Errorf("Config{NoCoopMat: true}: CoopMat %v (want off), CoopMatDevice %v (want on)", d.CoopMat, d.CoopMatDevice)
	}
	cfg, err := FromEnv(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d := openDevice(t, cfg).Device(); !d.CoopMat {
		t.Errorf("FromEnv(Config{}): CoopMat off")
	}
	t.Setenv("VKLLM_VULKAN_DISABLE", "coopmat")
	if cfg, err = FromEnv(Config{}); err != nil {
		t.Fatal(err)
	}
	if d := openDevice(t, cfg).Device(); d.CoopMat {
		t.Errorf("VKLLM_VULKAN_DISABLE=coopmat: CoopMat on")
	}
	// A tuning's tile that does not fit the device fails Open.
	_, err = Open(Config{Tuning: Tuning{"coopmat/q4_0": {"tm": 128, "tn": 128, "wm": 32, "wn": 32, "bk": 64}}})
	if !errors.Is(err, ErrTuning) {
		t.Errorf("a 128×128 tile with bk 64 (96 KiB of shared memory): %v, want ErrTuning", err)
	}
	checkClean(t, b)
}

// coopShapes are the MatMul shapes of the coop tests: n spans decode (1),
// the small tile, both sides of the crossover (32) and several
// large tiles with a ragged edge; m leaves ragged weight tiles; k is
// ragged for the float types (7, 263) and several steps of bk.
var coopShapes = struct{ ns, ms []int }{ns: []int{1, 5, 31, 32, 100}, ms: []int{19, 64, 70}}

func coopKs(dt tensor.DType) []int {
	switch dt.BlockSize() {
	case 1:
		return []int{7, 96, 263}
	case 32:
		return []int{32, 288}
	default:
		return []int{256, 768}
	}
}

// TestCoopMatMul checks the kernel for every CoopTypes dtype against two
// references in float64. The arithmetic is x̂·ŵ summed in float32, x̂ and
// ŵ the activation and the dequantised weight rounded to halves (nearest,
// ties to even), so:
//
//   - against Σ x̂ŵ (each product exact in float32: 11 × 11 bits), only
//     the float32 sums differ, in an order the device picks:
//     |got − Σx̂ŵ| ≤ γ(k)·Σ|x̂ŵ|, γ(k) = (k−1)u/(1−(k−1)u), u = 2^-24.
//     A tile, dequantisation or rounding bug breaks this bound by orders
//     of magnitude;
//   - against the exact Σ xw, the halves' rounding adds |x̂ŵ − xw| ≤
//     (2h + h²)|xw|, h = 2^-11: |got − Σxw| ≤ (2h + h² + γ(k)(1+h)²)·Σ|xw|,
//     the fp16-input bound (llama.cpp's arithmetic). The test logs the
//     largest distance measured, relative to Σ|xw|.
func TestCoopMatMul(t *testing.T) {
	b := openCoop(t, Config{})
	const u, h = 0x1p-24, 0x1p-11
	for _, tn := range shaders.CoopTypes {
		dt, _ := tensor.ParseDType(tn)
		t.Run(tn, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(dt)))
			worst := 0.0
			for _, k := range coopKs(dt) {
				for _, m := range coopShapes.ms {
					w, raw := kerneltest.RandomWeight(t, b, dt, m, k)
					deq := make([]float32, m*k)
					if err := tensor.Dequantize(dt, raw, deq); err != nil {
						t.Fatal(err)
					}
					for _, n := range coopShapes.ns {
						x := make([]float32, n*k)
						for i := range x {
							x[i] = float32(r.NormFloat64())
						}
						got := coopRun(t, b, w, x, n, k, m)
						g := float64(k-1) * u / (1 - float64(k-1)*u)
						for i := range n {
							for j := range m {
								var exact, abs, rounded, roundedAbs float64
								for e := range k {
									xv, wv := float64(x[i*k+e]), float64(deq[j*k+e])
									exact += xv * wv
									abs += math.Abs(xv * wv)
									p := float64(half(x[i*k+e])) * float64(half(deq[j*k+e]))
									rounded += p
									roundedAbs += math.Abs(p)
								}
								v := float64(got[i*m+j])
								if d := math.Abs(v - rounded); d > g*roundedAbs || math.IsNaN(v) {
									t.Fatalf("%s k %d m %d n %d: dst[%d][%d] = %v, Σx̂ŵ = %v: |Δ| %.3g > γ(k)·Σ|x̂ŵ| = %.3g",
										tn, k, m, n, i, j, v, rounded, d, g*roundedAbs)
								}
								bound := (2*h + h*h + g*(1+h)*(1+h)) * abs
								if d := math.Abs(v - exact); d > bound {
									t.Fatalf("%s k %d m %d n %d: dst[%d][%d] = %v, Σxw = %v: |Δ| %.3g > the fp16-input bound %.3g",
										tn, k, m, n, i, j, v, exact, d, bound)
								} else if abs > 0 {
									worst = max(worst, d/abs)
								}
							}
						}
					}
				}
			}
			t.Logf("%s: largest |got − Σxw| / Σ|xw| = %.3g (bound 2^-10 + γ(k): %.3g at k 768)", tn, worst, 2*h+h*h+767*u)
		})
	}
	checkClean(t, b)
}

// tileKnobs are tile t as a coop family's knobs.
func tileKnobs(t coopTile) Knobs {
	return Knobs{"tm": t.tm, "tn": t.tn, "wm": t.wm, "wn": t.wn, "bk": t.bk, "sg": t.sg}
}

func half(v float32) float32 { return float16.Fromfloat32(v).Float32() }

// coopRun returns x (n, k) · wᵀ (m rows) from b.
func coopRun(t *testing.T, b *Backend, w kernels.Tensor, x []float32, n, k, m int) []float32 {
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
	b.MatMul(d, xt, w)
	out := make([]float32, n*m)
	if err := b.GetF32(d, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCoopInvariance: with the cooperative-matrix kernel on, a token's
// result does not depend on the batch it is in, on its place in the
// batch, or on the chunking of a prompt: a 100-token product equals,
// bitwise, each token multiplied alone (a decode step, on the 16-token
// tile) and chunks of 7, 33 and 60 tokens (both tiles, tiles that start
// at another token), for every CoopTypes dtype; and the whole product is
// the same bits on other tiles (sweep candidates; for F16 and Q4_K). The default
// configuration's kernels have their own bitwise checks (kerneltest's
// batchInvariance through TestKernels and TestMatMulVariants); between
// the two configurations results differ (halves in the products), which
// the models' parity bounds decide (coop.go).
func TestCoopInvariance(t *testing.T) {
	b := openCoop(t, Config{})
	const n, m = 100, 70
	chunks := [][2]int{{0, 7}, {7, 40}, {40, 100}, {3, 4}, {64, 65}, {99, 100}}
	for _, tn := range shaders.CoopTypes {
		dt, _ := tensor.ParseDType(tn)
		t.Run(tn, func(t *testing.T) {
			ks := coopKs(dt)
			k := ks[len(ks)-1]
			w, _ := kerneltest.RandomWeight(t, b, dt, m, k)
			r := rand.New(rand.NewPCG(9, uint64(dt)))
			x := make([]float32, n*k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			all := coopRun(t, b, w, x, n, k, m)
			parts := chunks
			for i := range n {
				if i%9 == 0 {
					parts = append(parts, [2]int{i, i + 1})
				}
			}
			// Other tiles (sweep candidates) give the same bits: each as
			// the large tile, and the small tile for the whole batch.
			saved := b.tune
			defer func() { b.tune = saved }()
			tiles := []coopTile{{32, 32, 16, 16, 16, 1}, {64, 32, 32, 16, 64, 8}, {32, 128, 32, 64, 32, 1}}
			if dt != tensor.F16 && dt != tensor.Q4_K {
				tiles = nil // each tile's pipelines take seconds to build on lavapipe
			}
			key := typeName(dt)
			for _, tile := range tiles {
				if err := b.coopFits(tile); err != nil {
					t.Fatalf("tile %+v: %v", tile, err)
				}
				b.tune = Tuning{"coopmat/" + key: tileKnobs(tile)}
				got := coopRun(t, b, w, x, n, k, m)
				b.tune = Tuning{"coopmat_small/" + key: {"min": 1 << 30}}
				got1 := coopRun(t, b, w, x, n, k, m)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(all[i]) || math.Float32bits(got1[i]) != math.Float32bits(all[i]) {
						t.Fatalf("%s k %d: tile %+v gives element %d = %v, the small tile %v, the default %v", tn, k, tile, i, got[i], got1[i], all[i])
					}
				}
			}
			b.tune = saved
			for _, p := range parts {
				got := coopRun(t, b, w, x[p[0]*k:p[1]*k], p[1]-p[0], k, m)
				for i, v := range got {
					if want := all[p[0]*m+i]; math.Float32bits(v) != math.Float32bits(want) {
						t.Fatalf("%s k %d: tokens %d…%d alone give element %d = %v, inside the batch of %d %v",
							tn, k, p[0], p[1]-1, i, v, n, want)
					}
				}
			}
		})
	}
	checkClean(t, b)
}

// TestCoopFallback: where the cooperative-matrix kernel cannot run (a
// device without the extension) or is disabled (Config.NoCoopMat,
// VKLLM_VULKAN_DISABLE=coopmat), MatMul runs the exact kernels, which
// keep their strict limits and bitwise invariance.
func TestCoopFallback(t *testing.T) {
	b := openDevice(t, Config{})
	if b.Device().CoopMat {
		b = openDevice(t, Config{NoCoopMat: true})
	}
	if d := b.Device(); d.CoopMat {
		t.Fatalf("CoopMat on with NoCoopMat: %+v", d)
	}
	for _, dt := range WeightDTypes() {
		if name, ok := b.coopVariant(dt); ok {
			t.Errorf("%v: coop variant %s without CoopMat", dt, name)
		}
	}
	kerneltest.MatMulPrefillStrict(t, b)
	checkClean(t, b)
}

// TestCoopSplit: a weight split into parts (bindings of at most 4 KiB)
// gives the same bits on the cooperative-matrix kernel as whole.
func TestCoopSplit(t *testing.T) {
	whole := openCoop(t, Config{})
	split := openCoop(t, Config{MaxWeightPart: 4096, BlockSize: 4096})
	const n, m = 37, 70
	for _, dt := range []tensor.DType{tensor.F16, tensor.Q8_0, tensor.Q4_K} {
		ks := coopKs(dt)
		k := ks[len(ks)-1]
		ww, _ := kerneltest.RandomWeight(t, whole, dt, m, k)
		ws, _ := kerneltest.RandomWeight(t, split, dt, m, k)
		if p := len(ws.(*Tensor).parts); p < 2 {
			t.Fatalf("%v: %d part(s) with a 4 KiB limit", dt, p)
		}
		r := rand.New(rand.NewPCG(11, uint64(dt)))
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		want, got := coopRun(t, whole, ww, x, n, k, m), coopRun(t, split, ws, x, n, k, m)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: element %d = %v split, %v whole", dt, i, got[i], want[i])
			}
		}
	}
	checkClean(t, whole)
	checkClean(t, split)
}

// TestCoopDecodeChain: a decode step (one token, on the coopmat_small
// tile) gives the token the bits the prefill tile (coopmat) gives it in
// a batch, for every CoopTypes dtype, with the default tiles, which
// group the chain differently (bk 256 against 32, one subgroup
// multiplying against four, loader subgroups); on lavapipe both are also
// the chain itself, computed here: acc = A·B + acc over the MK-wide
// blocks of k in order, from zero, where lavapipe's A·B + acc sums a
// block's products (exact in float32: 11 × 11 bits) in order of k and
// adds the sum to acc (found by measurement). A kernel that reorders the
// blocks (or its sub-steps of bk) fails the second check wherever it
// does not already fail the first.
func TestCoopDecodeChain(t *testing.T) {
	b := openCoop(t, Config{})
	const m, n = 40, 40 // 40 rows: two whole 16-row tiles and an edge
	toks := []int{0, 17, 39}
	lavapipe := strings.HasPrefix(b.Device().Name, "llvmpipe")
	for _, tn := range shaders.CoopTypes {
		dt, _ := tensor.ParseDType(tn)
		t.Run(tn, func(t *testing.T) {
			big, small, minTokens := b.coopTiles(dt)
			if small == big || small.bk <= big.bk || n < minTokens {
				t.Fatalf("default tiles %+v (small) and %+v (for %d tokens or more): the test needs them apart", small, big, minTokens)
			}
			k := map[int]int{1: 600, 32: 608, 256: 768}[dt.BlockSize()] // past steps of 256: ragged but for the K-quants
			w, raw := kerneltest.RandomWeight(t, b, dt, m, k)
			deq := make([]float32, m*k)
			if err := tensor.Dequantize(dt, raw, deq); err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(21, uint64(dt)))
			x := make([]float32, n*k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			all := coopRun(t, b, w, x, n, k, m)
			mk := b.coopShape.k
			for _, tok := range toks {
				one := coopRun(t, b, w, x[tok*k:(tok+1)*k], 1, k, m)
				for j := range m {
					got, want := one[j], all[tok*m+j]
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%s k %d: token %d row %d decoded alone is %v, in the batch of %d %v", tn, k, tok, j, got, n, want)
					}
					if !lavapipe {
						continue
					}
					var acc float32
					for kb := 0; kb < k; kb += mk {
						var s float32 // the block's products, in order
						for e := kb; e < min(kb+mk, k); e++ {
							s += half(x[tok*k+e]) * half(deq[j*k+e])
						}
						acc += s
					}
					if math.Float32bits(acc) != math.Float32bits(want) {
						t.Fatalf("%s k %d: token %d row %d is %v, the chain over blocks of %d in order %v", tn, k, tok, j, want, mk, acc)
					}
				}
			}
		})
	}
	checkClean(t, b)
}
