//go:build cgo

package vulkan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// TestDispatchAllocs: once its pipelines and descriptor sets exist,
// recording a step's small ops allocates nothing on the Go heap.
func TestDispatchAllocs(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 2, 64)
	y, _ := b.NewTensor(tensor.F32, 2, 64)
	w, _ := b.NewTensor(tensor.F32, 64)
	pos, _ := b.NewTensor(tensor.I32, 2)
	cache, _ := b.NewTensor(tensor.F16, 8, 64)
	cells, _ := b.NewTensor(tensor.I32, 2)
	if err := b.SetI32(cells, []int32{3, 5}); err != nil {
		t.Fatal(err)
	}
	rope := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: 16, Theta: 10000}
	step := func() {
		b.Add(y, y, x)
		b.RMSNorm(x, y, w, 1e-6)
		b.SwiGLU(y, y, x)
		b.RoPE(x, pos, rope)
		b.KVWrite(cache, x, cells)
		b.AddRMSNorm(y, x, y, x, w, 1e-6)
		b.RoPEKVWrite(x, y, y, pos, cache, cache, cells, rope)
	}
	step()
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(50, step); n != 0 {
		t.Errorf("%v allocations a step of %d ops", n, 7)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, b)
}

// TestDescriptorSets: views of a tensor of every row count share one
// descriptor set, and a repeated step writes no new one; a full cache
// starts over without changing results; a freed buffer's sets go with it
// (a new tensor that gets its memory back is bound right).
func TestDescriptorSets(t *testing.T) {
	b := openTest(t, Config{BlockSize: 1 << 16})
	x, _ := b.NewTensor(tensor.F32, 4, 8)
	var ys [4]kernels.Tensor
	for i := range ys {
		ys[i], _ = b.NewTensor(tensor.F32, 4, 8)
	}
	one := make([]float32, 32)
	for i := range one {
		one[i] = float32(i)
	}
	if err := b.SetF32(x, one); err != nil {
		t.Fatal(err)
	}
	sets := len(b.sets)
	for n := 1; n <= 4; n++ { // views of 1…4 rows: one set
		b.Add(b.View(ys[0], n, 8), b.View(ys[0], n, 8), b.View(x, n, 8))
	}
	if len(b.sets) != sets+1 {
		t.Errorf("%d sets for Adds over views of 1…4 rows, want 1", len(b.sets)-sets)
	}
	step := func() {
		for _, y := range ys { // four sets
			b.Add(y, y, x)
		}
	}
	step()
	sets = len(b.sets)
	step()
	if len(b.sets) != sets {
		t.Errorf("%d sets after repeating the step, %d before", len(b.sets), sets)
	}
	b.maxSets = 2
	for range 3 {
		step()
	}
	b.maxSets = maxSets
	got := make([]float32, 32)
	for k, y := range ys {
		if err := b.GetF32(y, got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got { // 5 steps, and ys[0] row r 4-r times more
			want := 5 * one[i]
			if k == 0 {
				want += float32(4-i/8) * one[i]
			}
			if v != want {
				t.Fatalf("y%d element %d = %v, want %v", k, i, v, want)
			}
		}
	}

	// A tensor of its own block, freed, and a new one in its place.
	for round := range 3 {
		big, err := b.NewTensor(tensor.F32, 1<<15)
		if err != nil {
			t.Fatal(err)
		}
		src, _ := b.NewTensor(tensor.F32, 1<<15)
		v := make([]float32, 1<<15)
		for i := range v {
			v[i] = float32(round + 1)
		}
		if err := b.SetF32(src, v); err != nil {
			t.Fatal(err)
		}
		b.Add(big, src, src)
		if err := b.GetF32(big, v); err != nil {
			t.Fatal(err)
		}
		if v[0] != float32(2*(round+1)) || v[len(v)-1] != v[0] {
			t.Fatalf("round %d: %v … %v, want %v", round, v[0], v[len(v)-1], 2*(round+1))
		}
		b.Free(big)
		b.Free(src)
		live := map[uint64]bool{0: true} // 0: an unused binding
		for _, blk := range b.blocks {
			live[uint64(blk.buf)] = true
		}
		for k := range b.sets {
			for _, r := range k.r {
				if !live[uint64(r.buf)] {
					t.Fatalf("round %d: a cached set binds a freed buffer", round)
				}
			}
		}
	}
	checkClean(t, b)
}

// TestOpenNeed: a Need no device has free fails with a *FitError naming
// the device; a Need that fits opens it; a named device ignores Need.
func TestOpenNeed(t *testing.T) {
	v := openTest(t, Config{})
	name := v.Device().Name
	_, err := Open(Config{Need: 1 << 60})
	var fe *FitError
	if !errors.As(err, &fe) || errcode.Of(err) != errcode.OOMVRAM || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open with 1 EiB needed: %v, want a FitError naming %q", err, name)
	}
	for _, cfg := range []Config{{Need: 1 << 20}, {Need: 1 << 60, Device: "0"}} {
		b, err := Open(cfg)
		if err != nil {
			t.Fatalf("Open(%+v): %v", cfg, err)
		}
		b.Close()
	}
	// auto: a GPU without room is an error, a software device the CPU.
	a, err := kernels.Open(kernels.Auto, kernels.Options{Need: 1 << 60})
	switch {
	case v.Software() && (err != nil || a.Name() != kernels.CPU):
		t.Errorf("auto with 1 EiB needed on %s: %v, %v; want the CPU backend", name, a, err)
	case !v.Software() && errcode.Of(err) != errcode.OOMVRAM:
		t.Errorf("auto with 1 EiB needed on %s: %v; want OOM_VRAM rather than the CPU", name, err)
	}
	if a != nil {
		a.Close()
	}
}

// TestPieces: a long step is submitted in pieces while it is recorded
// (the device starts early), and ordered across them: each Add reads the
// previous one's sum, in and across the pieces.
func TestPieces(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 1, 8)
	y, _ := b.NewTensor(tensor.F32, 1, 8)
	if err := b.SetF32(x, []float32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	p0, s0 := b.Pieces(), b.Submits()
	const n = pieceFirst + 5*pieceEvery + 7
	for range n {
		b.Add(y, y, x)
	}
	if got := b.Pieces() - p0; got != 6 {
		t.Errorf("%d pieces for %d dispatches, want 6", got, n)
	}
	got := make([]float32, 8)
	if err := b.GetF32(y, got); err != nil {
		t.Fatal(err)
	}
	if d := b.Submits() - s0; d != 1 {
		t.Errorf("%d submits that waited, want 1", d)
	}
	for i, v := range got {
		if v != float32(n*(i+1)) {
			t.Fatalf("element %d = %v, want %v", i, v, n*(i+1))
		}
	}
	checkClean(t, b)
}

// TestFenceTimeout: a wait for the device that outlasts
// Config.FenceTimeout fails with VK_TIMEOUT (a lost device: every later
// call fails too) instead of blocking, and Close returns at once.
func TestFenceTimeout(t *testing.T) {
	b, err := Open(Config{FenceTimeout: time.Nanosecond, NoCoopMat: true})
	if err != nil {
		t.Skipf("open vulkan: %v", err)
	}
	const k, m, n = 2048, 2048, 64 // a MatMul lavapipe takes milliseconds over
	w, _ := b.NewTensor(tensor.F32, m, k)
	x, _ := b.NewTensor(tensor.F32, n, k)
	d, _ := b.NewTensor(tensor.F32, n, m)
	for range 4 {
		b.MatMul(d, x, w)
	}
	err = b.Sync()
	var ve *Error
	if !errors.As(err, &ve) || ve.Result != resTimeout || !ve.DeviceLost() || !strings.Contains(err.Error(), "vkWaitForFences") {
		t.Fatalf("Sync after a wait past the timeout: %v, want VK_TIMEOUT from vkWaitForFences", err)
	}
	if err := b.Sync(); err == nil {
		t.Error("a second Sync succeeded on a hung device")
	}
	done := make(chan error, 1)
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		t.Logf("close: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close blocked on a hung device")
	}
}
