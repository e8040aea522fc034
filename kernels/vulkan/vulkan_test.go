//go:build cgo

package vulkan

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/cpu" // "auto" falls back to "cpu"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// openTest opens the Vulkan backend with validation on and the exact
// float32 MatMul kernels (Config.NoCoopMat: the tests' strict bounds are
// theirs; the cooperative-matrix mode, the default on a device with the
// extension, has its own tests, coop_test.go). Without a driver the test
// fails (CI must run it) unless VKLLM_VULKAN_OPTIONAL=1.
func openTest(t testing.TB, cfg Config) *Backend {
	t.Helper()
	cfg.NoCoopMat = true
	return openDevice(t, cfg)
}

// openDevice is openTest with cfg's choice of MatMul kernels: the
// cooperative-matrix mode where the device has it, unless NoCoopMat.
// The validation layer's notes on its own coverage are logged; where the
// layer does not cover VK_KHR_cooperative_matrix (Debian 12's 1.3.239
// rejects the kernel's SPIR-V) and the mode is on, the backend is opened
// again without validation, as where no layer is installed, and says so.
func openDevice(t testing.TB, cfg Config) *Backend {
	t.Helper()
	cfg.Validation = true
	b := openChecked(t, cfg)
	if d := b.Device(); len(d.ValidationLacks) > 0 {
		t.Logf("the validation layer does not cover %v", d.ValidationLacks)
		notesOnce.Do(func() { t.Logf("its notes: %q", b.ValidationNotes()) })
		if d.CoopMat && slices.Contains(d.ValidationLacks, "VK_KHR_cooperative_matrix") {
			t.Log("the cooperative-matrix kernels run unvalidated")
			if err := b.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			cfg.Validation = false
			b = openChecked(t, cfg)
		}
	}
	return b
}

// notesOnce logs the validation layer's notes once per test binary.
var notesOnce sync.Once

// openChecked opens the backend with cfg; Close at cleanup must succeed.
func openChecked(t testing.TB, cfg Config) *Backend {
	t.Helper()
	b, err := Open(cfg)
	if err != nil {
		var nd *NoDriverError
		if (errors.As(err, &nd) || errors.Is(err, ErrNoDevice)) && os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" {
			t.Skipf("no Vulkan device (VKLLM_VULKAN_OPTIONAL=1): %v", err)
		}
		t.Fatalf("open vulkan: %v (run tools/install-deps.sh to install lavapipe, or set VKLLM_VULKAN_OPTIONAL=1 to skip)", err)
	}
	t.Logf("device %+v", b.Device())
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

// checkClean fails on any validation message so far.
func checkClean(t *testing.T, b *Backend) {
	t.Helper()
	if err := b.validation(); err != nil {
		t.Fatal(err)
	}
	if !b.Device().Validation && os.Getenv("VKLLM_VULKAN_OPTIONAL") != "1" {
		t.Log("validation off (no layer installed, or one that does not cover the kernels run): messages unchecked")
	}
}

func TestKernels(t *testing.T) {
	b := openTest(t, Config{})
	kerneltest.All(t, b)
	// The shaders dequantise exactly and compute in float32 from the
	// stored halves, so the strict limits hold too.
	t.Run("MatMulStrict", func(t *testing.T) { kerneltest.MatMulStrict(t, b) })
	t.Run("AttentionStrict", func(t *testing.T) { kerneltest.AttentionStrict(t, b) })
	checkClean(t, b)
}

// TestKernelsNoSubgroups runs the reductions' shared-memory fallbacks.
func TestKernelsNoSubgroups(t *testing.T) {
	b := openTest(t, Config{NoSubgroups: true})
	for _, c := range []struct {
		name string
		fn   func(*testing.T, kernels.Backend)
	}{{"MatMul", kerneltest.MatMul}, {"RMSNorm", kerneltest.RMSNorm}, {"Attention", kerneltest.Attention}} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
	checkClean(t, b)
}

// TestMatMulVariants runs MatMul's conformance tests, decode and prefill
// sizes, on every combination of the feature variants and their
// fallbacks (fp16 or float32 dots, subgroup or shared-memory reductions),
// and GateUpSwiGLU on the variants other than the default (TestKernels'),
// first checking that the variant asked for is the one that runs (on a
// device without the feature, the case is skipped, not passed on the
// fallback; lavapipe has them all).
func TestMatMulVariants(t *testing.T) {
	for _, c := range []struct {
		cfg          Config
		decode, tile string // the Q8_0 kernels for 1 and mmMinTokens tokens
	}{
		{Config{}, "matmul_q8_0_f32_subgroup", "matmul_mm_q8_0_f32_subgroup"},
		{Config{NoSubgroups: true}, "matmul_q8_0_f32", "matmul_mm_q8_0_f32"},
		{Config{FP16: true}, "matmul_q8_0_f32_fp16_subgroup", "matmul_mm_q8_0_f32_fp16_subgroup"},
		{Config{FP16: true, NoSubgroups: true}, "matmul_q8_0_f32_fp16", "matmul_mm_q8_0_f32_fp16"},
		{Config{NoTiled: true}, "matmul_q8_0_f32_subgroup", "matmul_q8_0_f32_subgroup"},
	} {
		t.Run(c.tile, func(t *testing.T) {
			b := openTest(t, c.cfg)
			if d := b.Device(); c.cfg.FP16 && !d.Float16 || !c.cfg.NoSubgroups && !d.Subgroups || !c.cfg.NoTiled && !d.Tiled {
				t.Skipf("device %+v lacks the feature", d)
			}
			decode, _ := b.matmulVariant(tensor.Q8_0, 1, mmMinK)
			tile, _ := b.matmulVariant(tensor.Q8_0, mmMinTokens, mmMinK)
			if decode != c.decode || tile != c.tile {
				t.Fatalf("kernels %s and %s on %+v, want %s and %s", decode, tile, b.Device(), c.decode, c.tile)
			}
			// kerneltest's longest rows (263 for the float types, 288 for
			// the 32-element quants, 768 for the K-quants) and 17 or 37
			// tokens reach the tiled kernel of every dtype that has one.
			for _, dt := range WeightDTypes() {
				_, tiled := b.matmulVariant(dt, 17, 256)
				if want := !c.cfg.NoTiled && slices.Contains(shaders.TiledTypes, dt.String()); tiled != want {
					t.Errorf("%v: tiled %v, want %v", dt, tiled, want)
				}
			}
			t.Run("MatMul", func(t *testing.T) { kerneltest.MatMul(t, b) })
			if c.cfg.FP16 || c.cfg.NoSubgroups {
				// TestGateUpSwiGLU's feature variants, on this backend's
				// MatMul pipelines.
				checkFused(t, b)
				t.Run("GateUpSwiGLU", func(t *testing.T) { kerneltest.GateUpSwiGLU(t, b) })
			}
			if c.cfg.FP16 {
				t.Run("MatMulPrefill", func(t *testing.T) { kerneltest.MatMulPrefill(t, b) })
			} else {
				// Float32 dots of exactly dequantised weights.
				t.Run("MatMulPrefill", func(t *testing.T) { kerneltest.MatMulPrefillStrict(t, b) })
			}
			checkClean(t, b)
		})
	}
}

// TestDisableEnv: VKLLM_VULKAN_DISABLE forces the fallbacks, through
// FromEnv; Open alone reads no variable.
func TestDisableEnv(t *testing.T) {
	t.Setenv("VKLLM_VULKAN_FP16", "1")
	t.Setenv("VKLLM_VULKAN_DISABLE", "fp16, subgroup,tiled,repack,replay")
	cfg, err := FromEnv(Config{Tuning: repackAll()})
	if err != nil {
		t.Fatal(err)
	}
	b := openTest(t, cfg)
	if d := b.Device(); d.FP16 || d.Subgroups || d.Tiled || len(d.Repacked) > 0 || d.Replay || b.Replays() {
		t.Errorf("device %+v with every feature disabled", d)
	}
	if d := openTest(t, Config{}).Device(); !d.Tiled || !d.Replay {
		t.Errorf("Open(Config{}) took VKLLM_VULKAN_DISABLE from the environment: %+v", d)
	}
	t.Setenv("VKLLM_VULKAN_DISABLE", "fp16,warp")
	if _, err := FromEnv(Config{}); err == nil || !strings.Contains(err.Error(), `"warp"`) {
		t.Errorf("unknown feature: %v", err)
	}
	if _, err := kernels.Open("vulkan", kernels.Options{}); err == nil || !strings.Contains(err.Error(), `"warp"`) {
		t.Errorf(`kernels.Open("vulkan") with an unknown feature: %v`, err)
	}
}

// TestPinnedSubgroups runs MatMul and Attention with pipelines created
// with a required subgroup size (subgroup size control).
func TestPinnedSubgroups(t *testing.T) {
	b := openTest(t, Config{PinSubgroups: true})
	if b.Device().PinnedSubgroup == 0 {
		t.Skip("no subgroup size control on this device")
	}
	t.Run("MatMul", func(t *testing.T) { kerneltest.MatMul(t, b) })
	t.Run("Attention", func(t *testing.T) { kerneltest.Attention(t, b) })
	checkClean(t, b)
}

// TestSplitAttention runs kerneltest's Attention cases on the decode
// kernel only (every batch below PrefillMin), and with a scratch of one
// token's segments, so that batches run one token at a time
// (TestAttentionChunks checks that bitwise).
func TestSplitAttention(t *testing.T) {
	b := openTest(t, Config{Attention: AttentionTuning{PrefillMin: 1 << 20}})
	t.Run("Attention", func(t *testing.T) { kerneltest.AttentionStrict(t, b) })
	checkClean(t, b)
	one := openTest(t, Config{Attention: AttentionTuning{PrefillMin: 1 << 20}, AttentionScratch: 1})
	t.Run("AttentionChunks", func(t *testing.T) { kerneltest.AttentionStrict(t, one) })
	checkClean(t, one)
}

// TestDTypes: every weight dtype kerneltest sweeps uploads (so none of
// its subtests is a skip), others fail with UnsupportedDTypeError, and F16
// caches are there.
func TestDTypes(t *testing.T) {
	b := openTest(t, Config{})
	want := []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1,
		tensor.Q5_0, tensor.Q5_1, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K}
	if got := WeightDTypes(); !slices.Equal(got, want) {
		t.Errorf("weight dtypes %v, want %v", got, want)
	}
	for _, dt := range want {
		rb, _ := dt.Bytes(256)
		w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{2, 256}, Data: make([]byte, 2*rb)})
		if err != nil {
			t.Errorf("%v: %v", dt, err)
			continue
		}
		b.Free(w)
	}
	for _, dt := range []tensor.DType{tensor.F64, tensor.Q8_1, tensor.Q8_K} {
		rb, _ := dt.Bytes(256)
		_, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{1, 256}, Data: make([]byte, rb)})
		var u *tensor.UnsupportedDTypeError
		if !errors.As(err, &u) {
			t.Errorf("%v: %v, want an UnsupportedDTypeError", dt, err)
		}
	}
	if !b.Device().Storage16 {
		t.Skip("no 16-bit storage: F16 caches unsupported on this device")
	}
	c, err := b.NewTensor(tensor.F16, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	b.Free(c)
}

// TestSplit: with bindings limited to 4 KiB, weights are split into
// parts and GetRows and MatMul still pass the suite.
func TestSplit(t *testing.T) {
	b := openTest(t, Config{MaxWeightPart: 4096, BlockSize: 4096})
	rb, _ := tensor.Q8_0.Bytes(288)
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: tensor.Q8_0, Shape: []int64{19, 288}, Data: make([]byte, 19*rb)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(w.(*Tensor).parts); n < 2 {
		t.Fatalf("a %d-byte weight in %d part(s) with a 4 KiB limit", 19*rb, n)
	}
	b.Free(w)
	t.Run("GetRows", func(t *testing.T) { kerneltest.GetRows(t, b) })
	t.Run("MatMul", func(t *testing.T) { kerneltest.MatMul(t, b) })
	t.Run("MatMulPrefill", func(t *testing.T) { kerneltest.MatMulPrefillStrict(t, b) })
	checkClean(t, b)
}

// TestOOM: a budget the tensors cannot fit gives OOM_VRAM, and the
// memory goes back to zero once everything is freed.
func TestOOM(t *testing.T) {
	b := openTest(t, Config{Budget: 1 << 20, BlockSize: 256 << 10})
	var held []kernels.Tensor
	var err error
	for range 10 {
		var x kernels.Tensor
		if x, err = b.NewTensor(tensor.F32, 256, 256); err != nil { // 256 KiB each
			break
		}
		held = append(held, x)
	}
	var oom *OOMError
	if !errors.As(err, &oom) || errcode.Of(err) != errcode.OOMVRAM {
		t.Fatalf("after %d tensors: %v, want an OOMError with code OOM_VRAM", len(held), err)
	}
	// A weight split in parts that runs out half way frees its parts.
	used, _ := b.Memory()
	rb, _ := tensor.F32.Bytes(1024)
	_, err = b.Upload(tensor.Tensor{Name: "big", DType: tensor.F32, Shape: []int64{1024, 1024}, Data: make([]byte, 1024*rb)})
	if errcode.Of(err) != errcode.OOMVRAM {
		t.Fatalf("big upload: %v, want OOM_VRAM", err)
	}
	if u, _ := b.Memory(); u != used {
		t.Errorf("memory %d after a failed upload, want %d", u, used)
	}
	for _, x := range held {
		b.Free(x)
	}
	if u, budget := b.Memory(); u != 0 || budget != 1<<20 {
		t.Errorf("memory used %d, budget %d after freeing everything; want 0 and %d", u, budget, 1<<20)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestNoDriver: a loader that is not there is a typed error, not a crash.
func TestNoDriver(t *testing.T) {
	_, err := Open(Config{Library: "libvulkan-does-not-exist.so.9"})
	var nd *NoDriverError
	if !errors.As(err, &nd) {
		t.Fatalf("got %v, want a *NoDriverError", err)
	}
	t.Setenv("VKLLM_VULKAN_LIB", "libvulkan-does-not-exist.so.9")
	if _, err := kernels.Open("vulkan", kernels.Options{}); !errors.As(err, &nd) {
		t.Fatalf("kernels.Open: %v, want a *NoDriverError", err)
	}
	b, err := kernels.Open("auto", kernels.Options{})
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("auto without a driver: %v, %v; want cpu", b, err)
	}
	// The loader is there but finds no driver (no ICD).
	t.Setenv("VKLLM_VULKAN_LIB", "")
	t.Setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json")
	t.Setenv("VK_DRIVER_FILES", "/nonexistent/icd.json")
	if _, err := Open(Config{}); !errors.As(err, &nd) {
		t.Fatalf("no ICD: %v, want a *NoDriverError", err)
	}
}

// TestAuto: "auto" never takes a software device; "vulkan" by name does.
func TestAuto(t *testing.T) {
	v := openTest(t, Config{})
	byName, err := kernels.Open("vulkan", kernels.Options{})
	if err != nil || byName.Name() != "vulkan" {
		t.Fatalf(`kernels.Open("vulkan"): %v, %v`, byName, err)
	}
	byName.Close()
	b, err := kernels.Open("auto", kernels.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if v.Software() && b.Name() != "cpu" {
		t.Errorf("auto chose %s over a software Vulkan device", b.Name())
	}
	if !v.Software() && b.Name() != "vulkan" {
		t.Errorf("auto chose %s with a GPU present", b.Name())
	}
}

// TestDeviceChoice: by index and by name; a bad one is ErrNoDevice.
func TestDeviceChoice(t *testing.T) {
	v := openTest(t, Config{})
	name := v.Device().Name
	for _, want := range []string{"0", name[:3]} {
		b, err := Open(Config{Device: want})
		if err != nil {
			t.Fatalf("device %q: %v", want, err)
		}
		b.Close()
	}
	t.Setenv("VKLLM_DEVICE", "no such device")
	if _, err := kernels.Open("vulkan", kernels.Options{}); !errors.Is(err, ErrNoDevice) {
		t.Fatalf("VKLLM_DEVICE=no such device: %v, want ErrNoDevice", err)
	}
	b, err := Open(Config{}) // reads no variable
	if err != nil {
		t.Fatalf("Open(Config{}) with VKLLM_DEVICE set: %v", err)
	}
	b.Close()
}

// TestOneSubmit: ops are recorded and submitted once, when read.
func TestOneSubmit(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 4, 8)
	y, _ := b.NewTensor(tensor.F32, 4, 8)
	if err := b.SetF32(x, make([]float32, 32)); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.Submits()
	for range 20 {
		b.Add(y, y, x)
		b.SwiGLU(y, y, x)
	}
	if b.Submits() != before {
		t.Fatalf("%d submits while recording", b.Submits()-before)
	}
	out := make([]float32, 32)
	if err := b.GetF32(y, out); err != nil {
		t.Fatal(err)
	}
	if n := b.Submits() - before; n != 1 {
		t.Fatalf("%d submits for one read, want 1", n)
	}
}

// TestBarriers: independent dispatches get no barrier between them; a
// dispatch reading their outputs gets one.
func TestBarriers(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 2, 64)
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: tensor.F32, Shape: []int64{8, 64}, Data: make([]byte, 8*64*4)})
	if err != nil {
		t.Fatal(err)
	}
	var outs []kernels.Tensor
	for range 3 {
		d, _ := b.NewTensor(tensor.F32, 2, 8)
		outs = append(outs, d)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	before := b.hz.barriers
	for _, d := range outs { // Q, K, V style
		b.MatMul(d, x, w)
	}
	if n := b.hz.barriers - before; n != 0 {
		t.Errorf("%d barriers between independent MatMuls", n)
	}
	b.Add(outs[0], outs[1], outs[2])
	if n := b.hz.barriers - before; n != 1 {
		t.Errorf("%d barriers before an Add of their outputs, want 1", n)
	}
	b.SwiGLU(outs[1], outs[1], outs[2]) // writes what the Add read
	if n := b.hz.barriers - before; n != 2 {
		t.Errorf("%d barriers before a SwiGLU overwriting the Add's input, want 2", n)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, b)
}

// TestManyDispatches: thousands of dependent dispatches (submitted in
// pieces while recorded, on every command buffer in turn) run in order.
func TestManyDispatches(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 1, 8)
	y, _ := b.NewTensor(tensor.F32, 1, 8)
	if err := b.SetF32(x, []float32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	for range n {
		b.Add(y, y, x)
	}
	got := make([]float32, 8)
	if err := b.GetF32(y, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != float32(n*(i+1)) {
			t.Fatalf("element %d = %v, want %v", i, v, n*(i+1))
		}
	}
	checkClean(t, b)
}

// checkFused checks that the fused gate/up kernel (matmul.comp's GATEUP)
// is the one that runs for decode and batched decode on b, and that
// prefill on the tiled kernel is left to the composition.
func checkFused(t *testing.T, b *Backend) {
	t.Helper()
	fused := func(n, k int) bool {
		w1, _ := kerneltest.RandomWeight(t, b, tensor.Q8_0, 19, k)
		w2, _ := kerneltest.RandomWeight(t, b, tensor.Q8_0, 19, k)
		x, _ := b.NewTensor(tensor.F32, n, k)
		d, _ := b.NewTensor(tensor.F32, n, 19)
		defer func() { b.Free(w1); b.Free(w2); b.Free(x); b.Free(d) }()
		return b.GateUpSwiGLU(d, x, w1, w2)
	}
	if !fused(1, 288) || !fused(5, 288) {
		t.Fatal("decode and batched decode not fused")
	}
	if b.Device().Tiled && fused(mmMinTokens, mmMinK) {
		t.Error("a prefill on the tiled kernel fused")
	}
}

// TestGateUpSwiGLU runs the fused gate/up matvec (matmul.comp's GATEUP)
// against MatMul, MatMul, SwiGLU, bitwise, on every weight type, with
// weights in several parts and the matvec tunings of the sweep's
// covering set (every knob's every value at least once), first checking
// that the fused kernel is the one that runs. The default backend's run
// is TestKernels' (kerneltest.All), the feature variants' (fp16 dots,
// shared-memory reductions) TestMatMulVariants', on the backends whose
// MatMul pipelines the composition reuses.
func TestGateUpSwiGLU(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		b := openTest(t, Config{})
		checkFused(t, b)
		checkClean(t, b)
	})
	t.Run("split", func(t *testing.T) {
		b := openTest(t, Config{MaxWeightPart: 4096, BlockSize: 4096})
		checkFused(t, b)
		t.Run("GateUpSwiGLU", func(t *testing.T) { kerneltest.GateUpSwiGLU(t, b) })
		checkClean(t, b)
	})
	t.Run("tunings", func(t *testing.T) {
		b := openTest(t, Config{})
		for _, fam := range []string{"matvec", "matvec_batch"} {
			for _, k := range Families[fam].Candidates() {
				if !coveringSet(k) {
					continue
				}
				t.Run(fam+"/"+k.String(), func(t *testing.T) {
					tune := Tuning{}
					for _, dt := range WeightDTypes() {
						tune[fam+"/"+typeName(dt)] = k
					}
					b.setTuning(tune)
					kerneltest.GateUpSwiGLU(t, b)
				})
			}
		}
		checkClean(t, b)
	})
}

// TestValidationNotes: the messages Debian 12's validation layer (1.3.239)
// gives on a device with VK_KHR_cooperative_matrix (as on the H200 on
// 2026-11-28, and on tools/lavapipe-coopmat.sh's lavapipe under that
// layer) are notes on its coverage; an unknown structure of another
// extension and the SPIR-V it cannot read are not.
func TestValidationNotes(t *testing.T) {
	for _, c := range []struct {
		text string
		note bool
	}{
		{"Validation Warning: [ VUID_Undefined ] Object 0: handle = 0x160e5d50, type = VK_OBJECT_TYPE_DEVICE; | MessageID = 0x79de34d4 | Device Extension VK_KHR_cooperative_matrix is not supported by this layer.  Using this extension may adversely affect validation results and/or produce undefined behavior.", true},
		{"Validation Error: [ VUID-VkPhysicalDeviceProperties2-pNext-pNext ] Object 0: VK_NULL_HANDLE, type = VK_OBJECT_TYPE_DEVICE; | MessageID = 0xdd73dbcf | vkGetPhysicalDeviceProperties2: pProperties->pNext chain includes a structure with unknown VkStructureType (1000506002); Allowed structures are [VkPhysicalDeviceAccelerationStructurePropertiesKHR]", true},
		{"Validation Error: [ VUID-VkDeviceCreateInfo-pNext-pNext ] Object 0: VK_NULL_HANDLE, type = VK_OBJECT_TYPE_DEVICE; | MessageID = 0x901f59ec | vkCreateDevice: pCreateInfo->pNext chain includes a structure with unknown VkStructureType (1000506000); Allowed structures are [VkDeviceDeviceMemoryReportCreateInfoEXT]", true},
		{"Validation Error: [ VUID-VkDeviceCreateInfo-pNext-pNext ] vkCreateDevice: pCreateInfo->pNext chain includes a structure with unknown VkStructureType (1000505000); Allowed structures are [...]", false},
		{"Validation Error: [ VUID-VkDeviceCreateInfo-pNext-pNext ] vkCreateDevice: pCreateInfo->pNext chain includes a structure with unknown VkStructureType (42)", false},
		{"Validation Error: [ VUID-VkShaderModuleCreateInfo-pCode-04146 ] vkCreateShaderModule(): A SPIR-V Extension (SPV_KHR_cooperative_matrix) was declared that is not supported by Vulkan.", false},
		{"Validation Error: [ SYNC-HAZARD-READ-AFTER-WRITE ] vkCmdDispatch: Hazard READ_AFTER_WRITE for VkBuffer 0x12", false},
	} {
		if got := layerNote(c.text); got != c.note {
			t.Errorf("layerNote = %v, want %v: %.120s", got, c.note, c.text)
		}
	}
}

// TestValidationErrorText: the error lists every distinct message kept
// with its count, and says how many more there were.
func TestValidationErrorText(t *testing.T) {
	e := &ValidationError{Count: 7, Messages: []ValidationMessage{{"first message", 1}, {"second message", 3}}}
	got := e.Error()
	for _, want := range []string{"7 validation messages", "1. first message", "2. (3 times) second message", "and 3 more not kept"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
