//go:build cgo

package vulkan

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

var _ kernels.OpProfiler = (*Backend)(nil)

// checkSpan fails unless p's labels add up to its span (to within the
// nanosecond a label that rounding ticks to nanoseconds may cost).
func checkSpan(t *testing.T, p *kernels.Profile) {
	t.Helper()
	var sum time.Duration
	for _, op := range p.Ops {
		sum += op.Time
	}
	if d := sum - p.Span; d < -time.Duration(len(p.Ops)) || d > time.Duration(len(p.Ops)) || p.Span <= 0 {
		t.Errorf("labels add up to %v, span %v", sum, p.Span)
	}
}

// checkMonotonic fails unless each submission's timestamps never go back.
func checkMonotonic(t *testing.T, tags []uint32, vals []uint64) {
	t.Helper()
	for i := 1; i < len(vals); i++ {
		if tags[i-1] != tsEnd && vals[i] < vals[i-1] {
			t.Errorf("timestamp %d: %d after %d", i, vals[i], vals[i-1])
		}
	}
}

const tsEnd, tsCont = 0xffffffff, 0x80000000

func TestProfile(t *testing.T) {
	b := openTest(t, Config{})
	const k = 1024
	x, _ := b.NewTensor(tensor.F32, 16, k)
	d, _ := b.NewTensor(tensor.F32, 16, k)
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: tensor.F32, Shape: []int64{k, k}, Data: make([]byte, k*k*4)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := b.NewTensor(tensor.F32, 1, 8)
	one, _ := b.NewTensor(tensor.F32, 1, 8)
	if err := b.SetF32(one, []float32{1, 1, 1, 1, 1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	stamps, submits := b.timestamps(), b.Submits()
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	b.ProfileOp("add")
	b.Add(a, a, one)
	b.ProfileOp("matmul") // 16 tokens × 1024² weights: the heavy one
	b.MatMul(d, x, w)
	b.ProfileOp("add")
	b.Add(a, a, one)
	b.ProfileOp("read")
	got := make([]float32, 8)
	if err := b.GetF32(a, got); err != nil {
		t.Fatal(err)
	}
	b.ProfileOp("nothing") // no work: not in the profile
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 2 {
		t.Errorf("a = %v after two adds of one, want 2", got)
	}
	if n := b.Submits() - submits; n != 1 || p.Submits != 1 {
		t.Errorf("%d submits, profile says %d; want 1 (profiling adds none)", n, p.Submits)
	}
	var labels []string
	calls := map[string]int{}
	times := map[string]time.Duration{}
	for _, op := range p.Ops {
		labels = append(labels, op.Label)
		calls[op.Label], times[op.Label] = op.Calls, op.Time
	}
	if want := []string{"add", "matmul", "read"}; !slices.Equal(labels, want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
	if calls["add"] != 2 || calls["matmul"] != 1 || calls["read"] != 1 {
		t.Errorf("calls %v", calls)
	}
	if times["matmul"] <= times["add"] {
		t.Errorf("matmul %v, two tiny adds %v: the heavy op got less time", times["matmul"], times["add"])
	}
	checkSpan(t, p)
	tags, vals := b.profileLog()
	if want := []uint32{1, 2, 1, 3, tsEnd}; !slices.Equal(tags, want) {
		t.Errorf("timestamp tags %#x, want %#x", tags, want)
	}
	checkMonotonic(t, tags, vals)
	if n := b.timestamps() - stamps; n != 5 {
		t.Errorf("%d timestamps written, want 5", n)
	}
	t.Logf("profile %+v", p)

	// Off again: ops write no timestamp.
	stamps = b.timestamps()
	b.ProfileOp("add")
	b.Add(a, a, one)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := b.timestamps() - stamps; n != 0 {
		t.Errorf("%d timestamps after StopProfile", n)
	}
	checkClean(t, b)
}

// TestProfileOff: a backend that never profiles writes no timestamp and
// has no query pool.
func TestProfileOff(t *testing.T) {
	b := openTest(t, Config{})
	a, _ := b.NewTensor(tensor.F32, 1, 8)
	b.ProfileOp("add") // outside a profile: nothing
	b.Add(a, a, a)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := b.timestamps(); n != 0 {
		t.Errorf("%d timestamps without a profile", n)
	}
	if b.queryPool() {
		t.Error("a query pool without a profile")
	}
}

// TestProfileManyCommands: a call whose work spans two command buffers
// (the descriptor set cache's early submit when full) counts once, and more timestamps
// than the query pool holds submit early; nothing is lost either way.
func TestProfileManyCommands(t *testing.T) {
	b := openTest(t, Config{})
	x, _ := b.NewTensor(tensor.F32, 1, 8)
	y, _ := b.NewTensor(tensor.F32, 1, 8)
	if err := b.SetF32(x, []float32{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatal(err)
	}
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	// With maxSets 1 every dispatch of "many" submits: 64 of them span
	// many command buffers. 2100 pairs write more timestamps than the
	// query pool's 4096 (POOL_QUERIES).
	const many, pairs = 64, 2100
	b.ProfileOp("many")
	b.maxSets = 1 // two sets alternate: each dispatch starts the cache over
	for i := range many {
		if i%2 == 0 {
			b.Add(y, y, x)
		} else {
			b.Add(y, x, y) // the same sum
		}
	}
	b.maxSets = maxSets
	for range pairs {
		b.ProfileOp("a")
		b.Add(y, y, x)
		b.ProfileOp("b")
		b.Add(y, y, x)
	}
	got := make([]float32, 8)
	if err := b.GetF32(y, got); err != nil {
		t.Fatal(err)
	}
	p, err := b.StopProfile()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if want := float32((many + 2*pairs) * (i + 1)); v != want {
			t.Fatalf("element %d = %v, want %v", i, v, want)
		}
	}
	calls := map[string]int{}
	for _, op := range p.Ops {
		calls[op.Label] = op.Calls
	}
	// The SetF32 before the profile is not in it: no "" label.
	if want := map[string]int{"many": 1, "a": pairs, "b": pairs}; len(calls) != len(want) || calls["many"] != 1 || calls["a"] != pairs || calls["b"] != pairs {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if p.Submits < 3 {
		t.Errorf("%d submits for %d dispatches and %d timestamps", p.Submits, many+2*pairs, 1+2*pairs)
	}
	checkSpan(t, p)
	tags, vals := b.profileLog()
	checkMonotonic(t, tags, vals)
	if !slices.Contains(tags, 1|tsCont) {
		t.Error(`no continued call: "many" did not span two command buffers`)
	}
	checkClean(t, b)
}

// TestProfileErrors: profiling out of order fails with the kernels
// sentinels, and nothing panics.
func TestProfileErrors(t *testing.T) {
	b := openTest(t, Config{})
	if _, err := b.StopProfile(); !errors.Is(err, kernels.ErrNotProfiling) {
		t.Errorf("stop without start: %v", err)
	}
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := b.StartProfile(); !errors.Is(err, kernels.ErrProfiling) {
		t.Errorf("second start: %v", err)
	}
	p, err := b.StopProfile()
	if err != nil || len(p.Ops) != 0 || p.Span != 0 || p.Submits != 0 {
		t.Errorf("empty profile %+v, %v", p, err)
	}
	if _, err := b.StopProfile(); !errors.Is(err, kernels.ErrNotProfiling) {
		t.Errorf("second stop: %v", err)
	}
	if err := b.StartProfile(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.StopProfile(); err == nil {
		t.Error("stop after close: no error")
	}
	if err := b.StartProfile(); err == nil {
		t.Error("start after close: no error")
	}
	b.ProfileOp("x") // no panic
}

// TestAttribute: the ticks between a timestamp and the next go to the
// first one's label, continued calls count once, the counter wraps at its
// valid bits, and a log that does not make a profile is an error.
func TestAttribute(t *testing.T) {
	labels := []string{"", "a", "b"}
	const end, cont = tsEnd, tsCont
	p, err := attribute(
		[]uint32{1, 2, 1, end, 1 | cont, 2, end},
		[]uint64{250, 254, 4, 10, 100, 110, 111}, labels, 8, 2.5) // 254 → 4 wraps: 6 ticks; 2.5 ns a tick
	if err != nil {
		t.Fatal(err)
	}
	want := &kernels.Profile{Ops: []kernels.OpTime{
		{Label: "a", Calls: 2, Time: 50}, // 4 + 6 + 10 ticks
		{Label: "b", Calls: 2, Time: 18}, // 6 + 1 ticks: 17.5 ns, rounded
	}, Span: 68, Submits: 2} // 16 + 11 ticks: 67.5 ns, rounded
	if !slices.Equal(p.Ops, want.Ops) || p.Span != want.Span || p.Submits != want.Submits {
		t.Errorf("profile %+v, want %+v", p, want)
	}
	for _, c := range []struct {
		name string
		tags []uint32
		vals []uint64
	}{
		{"end with no start", []uint32{end}, []uint64{1}},
		{"no end", []uint32{1, 2}, []uint64{1, 2}},
		{"unknown tag", []uint32{7, end}, []uint64{1, 2}},
		{"backwards", []uint32{1, end}, []uint64{5, 2}},
	} {
		if _, err := attribute(c.tags, c.vals, labels, 64, 1); !errors.Is(err, errProfileLog) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
