//go:build cgo

package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels/cpuref"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
)

// openVulkan opens the Vulkan backend (lavapipe in CI) with validation
// on and the exact float32 MatMul kernels (vulkan.Config.NoCoopMat),
// which the tests' bounds (1e-4 of the largest logit) are for; the
// cooperative-matrix mode, the default on a device with the extension,
// is TestVulkanCoopMat's. Without a driver the test fails unless
// VKLLM_VULKAN_OPTIONAL=1.
func openVulkan(t *testing.T) *vulkan.Backend { return openVulkanConfig(t, vulkan.Config{}) }

// openVulkanConfig is openVulkan with cfg.
func openVulkanConfig(t *testing.T, cfg vulkan.Config) *vulkan.Backend {
	t.Helper()
	cfg.NoCoopMat = true
	return openVulkanDevice(t, cfg)
}

// openVulkanDevice is openVulkanConfig with cfg's choice of MatMul
// kernels (the cooperative-matrix mode where the device has it, unless
// cfg.NoCoopMat). As kernels/vulkan's tests: the validation layer's notes
// on its coverage are logged, and where it does not cover
// VK_KHR_cooperative_matrix and the mode is on, the backend is opened
// again without validation.
func openVulkanDevice(t *testing.T, cfg vulkan.Config) *vulkan.Backend {
	t.Helper()
	cfg.Validation = true
	b := openVulkanChecked(t, cfg)
	if d := b.Device(); len(d.ValidationLacks) > 0 {
		t.Logf("the validation layer does not cover %v", d.ValidationLacks)
		notesOnce.Do(func() { t.Logf("its notes: %q", b.ValidationNotes()) })
		if d.CoopMat && slices.Contains(d.ValidationLacks, "VK_KHR_cooperative_matrix") {
			t.Log("the cooperative-matrix kernels run unvalidated")
			if err := b.Close(); err != nil {
				t.Errorf("vulkan: %v", err)
			}
			cfg.Validation = false
			b = openVulkanChecked(t, cfg)
		}
	}
	return b
}

// notesOnce logs the validation layer's notes once per test binary.
var notesOnce sync.Once

// openVulkanChecked opens the backend with cfg; Close at cleanup must
// succeed.
func openVulkanChecked(t *testing.T, cfg vulkan.Config) *vulkan.Backend {
	t.Helper()
	b, err := vulkan.Open(cfg)
	if err != nil {
		var nd *vulkan.NoDriverError
		if (errors.As(err, &nd) || errors.Is(err, vulkan.ErrNoDevice)) && os.Getenv("VKLLM_VULKAN_OPTIONAL") == "1" {
			t.Skipf("no Vulkan device (VKLLM_VULKAN_OPTIONAL=1): %v", err)
		}
		t.Fatalf("open vulkan: %v (run tools/install-deps.sh, or set VKLLM_VULKAN_OPTIONAL=1 to skip)", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("vulkan: %v", err)
		}
	})
	return b
}

func openOn(t *testing.T, path string, b *vulkan.Backend) *Model {
	t.Helper()
	m, err := Open(context.Background(), path, WithBackend(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestVulkanParity is TestParity on the Vulkan backend: the same goldens,
// the same bounds, every model of parityCases.
func TestVulkanParity(t *testing.T) {
	b := openVulkan(t)
	for _, c := range parityCases {
		t.Run(c.path, func(t *testing.T) { vulkanParity(t, b, c.path, c.golden) })
	}
}

// TestVulkanParitySplit: the same with every batch on the decode
// attention kernel (by default a prompt of 8 tokens or more runs the
// prefill kernel), its lists cut into 2 segments where they are longer
// than a chunk.
func TestVulkanParitySplit(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{Attention: vulkan.AttentionTuning{PrefillMin: 1 << 20, Segments: 2}})
	vulkanParity(t, b, "qwen2-tiny", "qwen2-tiny")
}

func vulkanParity(t *testing.T, b *vulkan.Backend, path, golden string) {
	t.Helper()
	checkParity(t, openOn(t, filepath.Join(testdata, path), b), loadGolden(t, golden))
}

// TestVulkanBatch: four prompts in one batch give the logits of each
// alone, within 1e-5 of the largest logit, on the Vulkan backend; also
// with every batch on the prefill attention kernel or every one on the
// decode kernel, and with the decode kernel's scratch holding one token
// (a batch runs in chunks of one).
func TestVulkanBatch(t *testing.T) {
	for _, c := range []struct {
		name, model string
		prefillMin  int
		scratch     int64
	}{
		{"qwen2-tiny", "qwen2-tiny", 0, 0}, {"llama-tiny-Q4_1", "llama-tiny-Q4_1.gguf", 0, 0},
		{"qwen2-tiny prefill kernel", "qwen2-tiny", 1, 0}, {"qwen2-tiny decode kernel", "qwen2-tiny", 1 << 20, 0},
		{"qwen2-tiny decode kernel chunks", "qwen2-tiny", 1 << 20, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := openVulkanConfig(t, vulkan.Config{Attention: vulkan.AttentionTuning{PrefillMin: c.prefillMin}, AttentionScratch: c.scratch})
			bitwise := true
			batchVsAlone(t, openOn(t, filepath.Join(testdata, c.model), b), func(got, alone []float32, seq, pos int) {
				if j, _, _ := farLogit(got, alone, 1e-5); j >= 0 {
					t.Fatalf("seq %d pos %d token %d: batched %v, alone %v", seq, pos, j, got[j], alone[j])
				}
				bitwise = bitwise && bitwiseEqual(got, alone)
			})
			t.Logf("batched logits bitwise equal to alone: %v", bitwise)
		})
	}
}

// TestVulkanOneSubmit: a prefill and a decode step are one submit each.
func TestVulkanOneSubmit(t *testing.T) {
	b := openVulkan(t)
	m := openOn(t, filepath.Join(testdata, "qwen2-tiny-Q8_0.gguf"), b)
	ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
	var bt Batch
	for i, tok := range prompts[0] {
		bt.Add(tok, int32(i), true, 0)
	}
	s0 := b.Submits()
	if err := ctx.Decode(bt); err != nil {
		t.Fatal(err)
	}
	s1 := b.Submits()
	if _, err := decodeToken(ctx, 0, 5); err != nil {
		t.Fatal(err)
	}
	if s1-s0 != 1 || b.Submits()-s1 != 1 {
		t.Errorf("prefill %d submits, decode step %d; want 1 and 1", s1-s0, b.Submits()-s1)
	}
}

// BenchmarkVulkanDecode is one decode step of qwen2-tiny (Q8_0) on the
// Vulkan device (lavapipe in CI: a correctness driver, not a speed one).
func BenchmarkVulkanDecode(bm *testing.B) {
	ctx := benchContext(bm, 512)
	var bt Batch
	for i, tok := range prompts[0] {
		bt.Add(tok, int32(i), true, 0)
	}
	if err := ctx.Decode(bt); err != nil {
		bm.Fatal(err)
	}
	pos := int32(len(prompts[0]))
	for bm.Loop() {
		if pos >= 500 {
			if err := ctx.SeqRm(0, -1, -1); err != nil {
				bm.Fatal(err)
			}
			pos = 0
		}
		var step Batch
		step.Add(7, pos, true, 0)
		if err := ctx.Decode(step); err != nil {
			bm.Fatal(err)
		}
		pos++
	}
	bm.ReportMetric(float64(bm.N)/bm.Elapsed().Seconds(), "tok/s")
}

// TestVulkanF16Cache: with an F16 KV cache, the Vulkan backend's logits
// (prefill and decode steps) match the CPU backend's with the same cache
// within 1e-4 of the largest logit, the goldens' bound (a K or V element
// may round to a neighbouring half when the two backends' float32 values
// differ in the last bit).
func TestVulkanF16Cache(t *testing.T) {
	b := openVulkan(t)
	path := filepath.Join(testdata, "qwen2-tiny-Q8_0.gguf")
	run := func(m *Model) [][]float32 {
		ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64, KVType: tensor.F16})
		var bt Batch
		for i, tok := range prompts[0] {
			bt.Add(tok, int32(i), true, 0)
		}
		if err := ctx.Decode(bt); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for i := range prompts[0] {
			out = append(out, append([]float32(nil), ctx.Logits(i)...))
		}
		for _, tok := range []int32{5, 17, 99} {
			l, err := decodeToken(ctx, 0, tok)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append([]float32(nil), l...))
		}
		return out
	}
	// Against the exact CPU path: the Vulkan kernels compute as the
	// reference does, not with Q8 activations.
	exact, err := Open(context.Background(), path, WithBackend(cpuref.New(0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exact.Close() })
	got, want := run(openOn(t, path, b)), run(exact)
	var worst float64
	for i := range want {
		var scale, diff float64
		for j, v := range want[i] {
			scale = math.Max(scale, math.Abs(float64(v)))
			diff = math.Max(diff, math.Abs(float64(got[i][j]-v)))
		}
		worst = math.Max(worst, diff/scale)
		if diff > 1e-4*scale {
			t.Fatalf("row %d: |vulkan − cpu| %.3g > 1e-4 × %.3g", i, diff, scale)
		}
	}
	t.Logf("largest |vulkan − cpu| / max|logit|: %.3g", worst)
}

// BenchmarkVulkanPrefill is a 64-token prefill of qwen2-tiny (Q8_0) on the
// Vulkan device.
func BenchmarkVulkanPrefill(bm *testing.B) {
	ctx := benchContext(bm, 128)
	const n = 64
	prefill := func() {
		if err := ctx.SeqRm(0, -1, -1); err != nil {
			bm.Fatal(err)
		}
		var bt Batch
		for i := range n {
			bt.Add(int32(i%50+1), int32(i), i == n-1, 0)
		}
		if err := ctx.Decode(bt); err != nil {
			bm.Fatal(err)
		}
	}
	prefill() // creates the pipelines (lavapipe compiles them) before the timing
	for bm.Loop() {
		prefill()
	}
	bm.ReportMetric(float64(n*bm.N)/bm.Elapsed().Seconds(), "tok/s")
}

// benchContext opens qwen2-tiny (Q8_0) on the Vulkan device with a
// context of ctxLen cells, closed when bm ends.
func benchContext(bm *testing.B, ctxLen int) *Context {
	b, err := vulkan.Open(vulkan.Config{})
	if err != nil {
		bm.Skipf("no Vulkan device: %v", err)
	}
	bm.Cleanup(func() { b.Close() })
	m, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny-Q8_0.gguf"), WithBackend(b))
	if err != nil {
		bm.Fatal(err)
	}
	bm.Cleanup(func() { m.Close() })
	ctx, err := m.NewContext(ContextParams{ContextLen: ctxLen, BatchSize: 64})
	if err != nil {
		bm.Fatal(err)
	}
	bm.Cleanup(func() { ctx.Close() })
	return ctx
}

// TestVulkanOOM: a model that does not fit the device budget fails to
// open with OOM_VRAM, and leaves no device memory behind.
func TestVulkanOOM(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{Budget: 96 << 10, BlockSize: 32 << 10})
	_, err := Open(context.Background(), filepath.Join(testdata, "qwen2-tiny"), WithBackend(b))
	if errcode.Of(err) != errcode.OOMVRAM {
		t.Fatalf("open with a 96 KiB budget: %v (code %q), want OOM_VRAM", err, errcode.Of(err))
	}
	t.Log(err)
	if used, _ := b.Memory(); used != 0 {
		t.Errorf("%d bytes of device memory held after the failed open", used)
	}
	// A model that fits, then a context that does not.
	b2 := openVulkanConfig(t, vulkan.Config{Budget: 2 << 20, BlockSize: 64 << 10})
	m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b2)
	held, _ := b2.Memory()
	if _, err := m.NewContext(ContextParams{ContextLen: 4096, MaxSeqs: 16, BatchSize: 64}); errcode.Of(err) != errcode.OOMVRAM {
		t.Fatalf("context too big for the budget: %v, want OOM_VRAM", err)
	}
	if used, _ := b2.Memory(); used != held {
		t.Errorf("%d bytes held after the failed context, %d before", used, held)
	}
}

// TestVulkanPlacement is TestPlacement on the Vulkan backend.
func TestVulkanPlacement(t *testing.T) {
	b := openVulkan(t)
	for _, path := range []string{"qwen2-tiny", "llama-tiny-Q4_0.gguf"} {
		t.Run(path, func(t *testing.T) { placement(t, openOn(t, filepath.Join(testdata, path), b)) })
	}
}

// TestVulkanDecodeAllocatesNothing is TestDecodeAllocatesNothing inside
// the Vulkan backend: after NewContext, Decode steps whose lists grow
// past the attention segment (16 cells: split attention) and whose
// batches grow to BatchSize make no device allocation, counted by the
// backend itself (its own scratch included) once the first step has
// made the RoPE table. A second Context with a
// larger batch grows the backend's memory when it is made, not when it
// decodes. The scratch bound of one token makes the larger batches run
// in chunks.
func TestVulkanDecodeAllocatesNothing(t *testing.T) {
	for _, limit := range []int64{0, 1} {
		b := openVulkanConfig(t, vulkan.Config{AttentionScratch: limit})
		m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
		vocab := int32(m.Config.VocabSize)
		// A step of n tokens: most to sequence 0, one in four to 1; next
		// holds each sequence's next position.
		step := func(ctx *Context, next *[2]int32, n int) {
			t.Helper()
			var bt Batch
			for i := range n {
				s := SeqID(0)
				if i%4 == 3 {
					s = 1
				}
				bt.Add((next[s]*7+int32(i))%vocab, next[s], i == n-1, s)
				next[s]++
			}
			if err := ctx.Decode(bt); err != nil {
				t.Fatalf("%d tokens: %v", n, err)
			}
		}
		check := func(what string, base uint64) {
			t.Helper()
			if got := b.Allocations() - base; got != 0 {
				t.Fatalf("scratch limit %d: %s: %d device allocations since NewContext", limit, what, got)
			}
		}

		ctx := newCtx(t, m, ContextParams{ContextLen: 256, MaxSeqs: 2, BatchSize: 8})
		var next [2]int32
		// The first RoPE makes the model's frequency table (once per
		// RoPE parameters, 64 floats); nothing else may allocate.
		base := b.Allocations()
		step(ctx, &next, 1)
		if got := b.Allocations() - base; got > 1 {
			t.Fatalf("scratch limit %d: the first step (1 token, 1 cell): %d device allocations, want at most the RoPE table", limit, got)
		}
		base = b.Allocations()
		sizes := []int{1, 2, 3, 5}
		for range 26 {
			sizes = append(sizes, 8)
		}
		for _, n := range sizes {
			step(ctx, &next, n)
			check(fmt.Sprintf("a batch of %d, sequence 0 at %d cells", n, next[0]), base)
		}
		if next[0] <= 16*8 {
			t.Fatalf("sequence 0 reached only %d cells", next[0])
		}

		// A second Context: a larger batch over a smaller cache.
		big := newCtx(t, m, ContextParams{ContextLen: 160, MaxSeqs: 2, BatchSize: 32})
		base = b.Allocations()
		var nextBig [2]int32
		for _, n := range []int{32, 1, 32, 7, 32, 32} {
			step(big, &nextBig, n)
			check(fmt.Sprintf("second context, a batch of %d, sequence 0 at %d cells", n, nextBig[0]), base)
		}
		for range 3 {
			step(ctx, &next, 8)
			check("first context again", base)
		}
	}
}

// TestVulkanReserveOOM: a Context whose attention scratch does not fit
// the device budget fails with OOM_VRAM and leaves the backend as it was;
// with the scratch bounded below the budget the same Context is made and
// decodes (its batches' attention in chunks of tokens).
func TestVulkanReserveOOM(t *testing.T) {
	// Every batch on the decode kernel: a token of qwen2-tiny (4 heads of
	// 16) over 256 cells has 4 segments of 18 floats a head (1152 bytes),
	// a batch of 512 576 KiB. The budget leaves 128 KiB past what the
	// Context takes without it (every batch on the prefill kernel, which
	// needs no scratch).
	p := ContextParams{ContextLen: 256, BatchSize: 512}
	b := openVulkanConfig(t, vulkan.Config{BlockSize: 64 << 10, Attention: vulkan.AttentionTuning{PrefillMin: 1}})
	newCtx(t, openOn(t, filepath.Join(testdata, "qwen2-tiny"), b), p)
	budget, _ := b.Memory()
	budget += 128 << 10
	decode := vulkan.AttentionTuning{PrefillMin: 1 << 20}
	b = openVulkanConfig(t, vulkan.Config{Budget: budget, BlockSize: 64 << 10, Attention: decode})
	m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
	held, _ := b.Memory()
	_, err := m.NewContext(p)
	var oom *vulkan.OOMError
	if !errors.As(err, &oom) || errcode.Of(err) != errcode.OOMVRAM {
		t.Fatalf("a 576 KiB attention scratch with 128 KiB to spare: %v, want a *vulkan.OOMError (OOM_VRAM)", err)
	}
	if used, _ := b.Memory(); used != held {
		t.Errorf("%d bytes held after the failed context, %d before", used, held)
	}

	b = openVulkanConfig(t, vulkan.Config{Budget: budget, BlockSize: 64 << 10, Attention: decode, AttentionScratch: 32 << 10})
	m = openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
	ctx := newCtx(t, m, p)
	var bt Batch
	for i := range 64 {
		bt.Add(int32(i), int32(i), i == 63, 0)
	}
	if err := ctx.Decode(bt); err != nil {
		t.Fatal(err)
	}
}

// TestVulkanStagingReserved: a step that moves more host data than the
// staging memory a backend starts with (lists 256 cells wide for 2040
// tokens, and the logits of every one of them) allocates nothing on a
// Context made for it (MaxOutputs), on the device or in staging.
func TestVulkanStagingReserved(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{})
	m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
	const seqs, per = 8, 255
	ctx := newCtx(t, m, ContextParams{ContextLen: seqs * 256, MaxSeqs: seqs, BatchSize: seqs * 256, MaxOutputs: seqs * per})
	vocab := int32(m.Config.VocabSize)
	var first Batch
	for s := range seqs {
		first.Add(int32(s+3), 0, true, SeqID(s))
	}
	if err := ctx.Decode(first); err != nil { // makes the RoPE table
		t.Fatal(err)
	}
	base := b.Allocations()
	var bt Batch
	for s := range seqs {
		for p := 1; p <= per; p++ {
			bt.Add((int32(s*31+p*7)+3)%vocab, int32(p), true, SeqID(s))
		}
	}
	if err := ctx.Decode(bt); err != nil {
		t.Fatal(err)
	}
	if got := b.Allocations() - base; got != 0 {
		t.Fatalf("a step of %d tokens, all asking for logits: %d device or staging allocations", bt.Len(), got)
	}
	if ctx.Logits(bt.Len()-1) == nil {
		t.Fatal("no logits for the last token")
	}
}
