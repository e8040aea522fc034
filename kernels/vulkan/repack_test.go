//go:build cgo

package vulkan

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

// repackAll is a tuning that repacks every dtype that has a layout.
func repackAll() Tuning {
	t := Tuning{}
	for _, dt := range RepackDTypes() {
		t["layout/"+typeName(dt)] = Knobs{"repack": 1}
	}
	return t
}

// TestRepackLayout: repack and unpack are inverses that move every byte
// of a run, and only rows of whole runs are repacked.
func TestRepackLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range RepackDTypes() {
		src := make([]byte, 3*repackRun*dt.BlockBytes())
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		packed, back := make([]byte, len(src)), make([]byte, len(src))
		repack(dt, packed, src)
		unpack(dt, back, packed)
		if !bytes.Equal(back, src) {
			t.Errorf("%v: unpack(repack(x)) != x", dt)
		}
		if bytes.Equal(packed, src) {
			t.Errorf("%v: repack moved nothing", dt)
		}
		p := packings[dt]
		// Block 9's quants (run 1, block 1) and its scales.
		run := repackRun * dt.BlockBytes()
		head, body := p.split(src[9*dt.BlockBytes() : 10*dt.BlockBytes()])
		if !bytes.Equal(packed[run+p.body:run+2*p.body], body) ||
			!bytes.Equal(packed[run+repackRun*p.body+p.head:run+repackRun*p.body+2*p.head], head) {
			t.Errorf("%v: block 9 not where weights.glsl reads it", dt)
		}
		if n := repackRun * dt.BlockSize(); !repackable(dt, n) || !repackable(dt, 3*n) || repackable(dt, n-dt.BlockSize()) || repackable(dt, 0) {
			t.Errorf("%v: repackable wrong", dt)
		}
	}
	if repackable(tensor.Q4_K, 2048) || repackable(tensor.F32, 2048) {
		t.Error("a dtype without a layout is repackable")
	}
}

// TestRepack: every op that reads a weight gives bitwise the same results
// with the weights repacked as in their file layout (MatMul's
// matrix-vector, batched and tiled kernels, GateUpSwiGLU, GetRows, GetF32),
// on whole and split weights. (kerneltest's row lengths are not whole
// runs, so its checks would not see a repacked weight: the comparison
// with the file layout, which they check, is the test.)
func TestRepack(t *testing.T) {
	off := openTest(t, Config{})
	on := openTest(t, Config{Tuning: repackAll()})
	if got, want := on.Device().Repacked, []string{"Q8_0", "Q4_0", "Q4_1", "Q6_K"}; !slices.Equal(got, want) {
		t.Fatalf("Repacked %v, want %v", got, want)
	}
	if d := off.Device().Repacked; len(d) != 0 {
		t.Fatalf("repacked by default: %v", d)
	}
	if d := openTest(t, Config{Tuning: repackAll(), NoRepack: true}).Device().Repacked; len(d) != 0 {
		t.Fatalf("NoRepack: %v", d)
	}
	if d := openTest(t, Config{Tuning: repackAll(), Int8: true}).Device().Repacked; len(d) != 0 {
		t.Fatalf("int8 mode (its kernels read the file layout): %v", d) // every repackable dtype has int8 kernels
	}
	t.Run("Bitwise", func(t *testing.T) { repackBitwise(t, off, on) })
	split := openTest(t, Config{Tuning: repackAll(), MaxWeightPart: 6000}) // most weights below in several parts
	t.Run("BitwiseSplit", func(t *testing.T) { repackBitwise(t, off, split) })
	checkClean(t, on)
	checkClean(t, split)
}

// TestCoopRepack is TestRepack's bitwise check on the cooperative-matrix
// kernel.
func TestCoopRepack(t *testing.T) {
	off := openCoop(t, Config{})
	on := openCoop(t, Config{Tuning: repackAll()})
	repackBitwise(t, off, on)
}

// repackBitwise runs every weight-reading op on b (file layout) and p
// (repacked) for each repackable dtype and compares the bits.
func repackBitwise(t *testing.T, b, p *Backend) {
	for _, dt := range RepackDTypes() {
		run := repackRun * dt.BlockSize()
		for _, k := range []int{run, 3 * run} {
			const rows = 37
			wb, data := kerneltest.RandomWeight(t, b, dt, rows, k)
			wp, _ := kerneltest.RandomWeight(t, p, dt, rows, k)
			ub, _ := kerneltest.RandomWeight(t, b, dt, rows, k)
			up, _ := kerneltest.RandomWeight(t, p, dt, rows, k)
			if wb.(*Tensor).repacked || !wp.(*Tensor).repacked {
				t.Fatalf("%v: repacked %v and %v", dt, wb.(*Tensor).repacked, wp.(*Tensor).repacked)
			}
			name := dt.String() + " k=" + rpItoa(k)
			// GetF32 reads the file's values back.
			want := make([]float32, rows*k)
			if err := tensor.Dequantize(dt, data, want); err != nil {
				t.Fatal(err)
			}
			rpSame(t, name+" GetF32", rpGet(t, b, wb), want)
			rpSame(t, name+" GetF32", rpGet(t, p, wp), want)
			// GetRows.
			ids := []int32{0, 36, 5, 17, 17, 2}
			rpSame(t, name+" GetRows", rpGetRows(t, p, wp, ids, k), rpGetRows(t, b, wb, ids, k))
			r := rand.New(rand.NewPCG(uint64(k), 9))
			for _, n := range []int{1, 5, 16, 33} {
				x := make([]float32, n*k)
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				rpSame(t, name+" MatMul n="+rpItoa(n), rpMatMul(t, p, wp, x, n), rpMatMul(t, b, wb, x, n))
				gb, okb := rpGateUp(t, b, wb, ub, x, n)
				gp, okp := rpGateUp(t, p, wp, up, x, n)
				if okb != okp {
					t.Errorf("%s GateUpSwiGLU n=%d: ran %v in the file layout, %v repacked", name, n, okb, okp)
				} else if okb {
					rpSame(t, name+" GateUpSwiGLU n="+rpItoa(n), gp, gb)
				}
			}
			for _, w := range []kernels.Tensor{wb, ub} {
				b.Free(w)
			}
			for _, w := range []kernels.Tensor{wp, up} {
				p.Free(w)
			}
		}
	}
}

func rpItoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return rpItoa(n/10) + string(rune('0'+n%10))
}

// rpSame fails unless got and want are bitwise equal.
func rpSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("%s: element %d is %v, want %v (bitwise)", what, i, got[i], want[i])
			return
		}
	}
}

func rpGet(t *testing.T, b *Backend, x kernels.Tensor) []float32 {
	t.Helper()
	out := make([]float32, numel(x.(*Tensor)))
	if err := b.GetF32(x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func rpF32(t *testing.T, b *Backend, x []float32, rows, cols int) kernels.Tensor {
	t.Helper()
	d, err := b.NewTensor(tensor.F32, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if x != nil {
		if err := b.SetF32(d, x); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func rpMatMul(t *testing.T, b *Backend, w kernels.Tensor, x []float32, n int) []float32 {
	t.Helper()
	wt := w.(*Tensor)
	xt, d := rpF32(t, b, x, n, wt.cols), rpF32(t, b, nil, n, wt.rows)
	defer b.Free(xt)
	defer b.Free(d)
	b.MatMul(d, xt, w)
	return rpGet(t, b, d)
}

func rpGateUp(t *testing.T, b *Backend, g, u kernels.Tensor, x []float32, n int) ([]float32, bool) {
	t.Helper()
	gt := g.(*Tensor)
	xt, d := rpF32(t, b, x, n, gt.cols), rpF32(t, b, nil, n, gt.rows)
	defer b.Free(xt)
	defer b.Free(d)
	if !b.GateUpSwiGLU(d, xt, g, u) {
		return nil, false
	}
	return rpGet(t, b, d), true
}

func rpGetRows(t *testing.T, b *Backend, w kernels.Tensor, ids []int32, k int) []float32 {
	t.Helper()
	it, err := b.NewTensor(tensor.I32, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(it)
	if err := b.SetI32(it, ids); err != nil {
		t.Fatal(err)
	}
	d := rpF32(t, b, nil, len(ids), k)
	defer b.Free(d)
	b.GetRows(d, w, it)
	return rpGet(t, b, d)
}
