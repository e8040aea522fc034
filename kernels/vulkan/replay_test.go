//go:build cgo

package vulkan

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// TestReplay: a recording submitted again reads the inputs written
// before it (positions, cells, activations), not those of the step it
// was recorded in, and gives the bits recording the ops again gives; a
// Free drops it, a copy inside a capture ends it unkept (the ops still
// run), and a profile turns replay off.
func TestReplay(t *testing.T) {
	b := openTest(t, Config{})
	const n, dim = 3, 64
	x, _ := b.NewTensor(tensor.F32, n, dim)
	y, _ := b.NewTensor(tensor.F32, n, dim)
	z, _ := b.NewTensor(tensor.F32, n, dim)
	pos, _ := b.NewTensor(tensor.I32, n)
	cells, _ := b.NewTensor(tensor.I32, n)
	cache, _ := b.NewTensor(tensor.F32, 8, dim)
	rope := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: 16, Theta: 10000}
	b.RoPE(x, pos, rope) // the frequency table: a copy, before any capture
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	ops := func() {
		b.RoPE(x, pos, rope)
		b.KVWrite(cache, x, cells)
		b.Add(y, x, z)
	}
	set := func(step int) {
		t.Helper()
		xs, zs := make([]float32, n*dim), make([]float32, n*dim)
		for i := range xs {
			xs[i], zs[i] = float32(math.Sin(float64(i*(step+3)))), float32(step)
		}
		for _, err := range []error{b.SetF32(x, xs), b.SetF32(z, zs),
			b.SetI32(pos, []int32{int32(step), int32(2 * step), int32(step + 7)}), b.SetI32(cells, []int32{int32(step % 8), int32((step + 3) % 8), int32((step + 5) % 8)})} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func() (out, kv []float32) {
		t.Helper()
		out, kv = make([]float32, n*dim), make([]float32, 8*dim)
		if err := b.GetF32(y, out); err != nil {
			t.Fatal(err)
		}
		if err := b.GetF32(cache, kv); err != nil {
			t.Fatal(err)
		}
		return out, kv
	}
	set(1)
	b.BeginCapture()
	ops()
	id := b.EndCapture()
	if id == 0 {
		t.Fatal("EndCapture kept nothing")
	}
	first, _ := read()
	for step := 2; step < 6; step++ {
		set(step)
		ops()
		want, wantKV := read()
		set(step)
		if !b.Replay(id) {
			t.Fatalf("step %d: recording %d gone", step, id)
		}
		got, gotKV := read()
		if !bitwiseEqual32(got, want) || !bitwiseEqual32(gotKV, wantKV) {
			t.Fatalf("step %d: the replay's results differ from the ops recorded again", step)
		}
		if bitwiseEqual32(got, first) {
			t.Fatalf("step %d: the replay gave the recorded step's results (stale inputs)", step)
		}
	}
	if got := b.Replayed(); got != 4 {
		t.Errorf("Replayed() = %d, want 4", got)
	}

	// A copy from the host inside a capture ends it unkept; the ops ran.
	set(9)
	b.BeginCapture()
	ops()
	if err := b.SetI32(pos, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	b.Add(y, y, z)
	if id := b.EndCapture(); id != 0 {
		t.Errorf("a capture with a copy inside kept recording %d", id)
	}
	got, _ := read()
	set(9)
	ops()
	b.Add(y, y, z)
	if want, _ := read(); !bitwiseEqual32(got, want) {
		t.Error("an interrupted capture's ops gave other results")
	}

	// A Free drops every recording.
	w, _ := b.NewTensor(tensor.F32, 4)
	b.Free(w)
	if b.Replay(id) {
		t.Error("a recording outlived a Free")
	}
	if err := b.StartProfile(); err == nil {
		if b.Replays() {
			t.Error("Replays() while profiling")
		}
		if _, err := b.StopProfile(); err != nil {
			t.Error(err)
		}
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
}

func bitwiseEqual32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
