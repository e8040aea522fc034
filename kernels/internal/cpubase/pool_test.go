package cpubase

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels"
)

// A closed Pool's helpers are gone; it runs jobs of any size on the
// calling goroutine alone when there are none.
func TestPoolRunsEveryTaskOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		for _, tasks := range []int{0, 1, 2, 7, 100} {
			hits := make([]int32, tasks)
			p.Run(tasks, func(w, task int) {
				if w < 0 || w >= threads {
					t.Errorf("worker %d of %d", w, threads)
				}
				hits[task]++
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d: task %d of %d ran %d times", threads, i, tasks, h)
				}
			}
		}
		p.Close()
	}
}

// RunRanges and RunRangesGuided cover [0, n) exactly once, in chunks of
// at most chunk, with worker ids in range.
func TestPoolRangesCoverOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		for _, c := range [][3]int{{0, 4, 4}, {1, 4, 4}, {7, 1, 1}, {100, 16, 16}, {1000, 7, 7}, {100, 16, 1}, {1000, 64, 5}, {1000, 1000, 3}} {
			n, chunk, least := c[0], c[1], c[2]
			var mu sync.Mutex
			hits := make([]int32, n)
			p.RunRangesGuided(n, chunk, least, func(w, lo, hi int) {
				if w < 0 || w >= threads || hi-lo > chunk || lo >= hi {
					t.Errorf("worker %d of %d, range [%d, %d) with chunk %d", w, threads, lo, hi, chunk)
				}
				mu.Lock()
				for i := lo; i < hi; i++ {
					hits[i]++
				}
				mu.Unlock()
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d, n %d, chunk %d, least %d: item %d covered %d times", threads, n, chunk, least, i, h)
				}
			}
		}
		p.Close()
	}
}

// A panic in an op's function, on a helper or on the calling goroutine,
// comes out of Run and RunRanges on the caller (a helper's as a
// *kernels.WorkerPanic), only once no helper is still inside the job; and
// the Pool runs the next job in full.
func TestPoolPanics(t *testing.T) {
	type jobFn func(p *Pool, fn func(w, lo, hi int))
	jobs := map[string]jobFn{
		"run":       func(p *Pool, fn func(w, lo, hi int)) { p.Run(64, func(w, t int) { fn(w, t, t+1) }) },
		"runRanges": func(p *Pool, fn func(w, lo, hi int)) { p.RunRangesGuided(64, 4, 1, fn) },
	}
	for name, job := range jobs {
		for _, threads := range []int{2, 5} {
			p := NewPool(threads)
			// On a helper: the caller waits (up to 10 s) for a helper to
			// take a chunk, which panics.
			var helperIn atomic.Bool
			got := catch(func() {
				job(p, func(w, lo, hi int) {
					if w != 0 {
						helperIn.Store(true)
						panic("helper boom")
					}
					for end := time.Now().Add(10 * time.Second); !helperIn.Load() && time.Now().Before(end); {
						runtime.Gosched()
					}
				})
			})
			if wp, ok := got.(*kernels.WorkerPanic); !ok || wp.Value != "helper boom" || len(wp.Stack) == 0 {
				t.Fatalf("%s, %d threads, panic on a helper: recovered %v, want a *kernels.WorkerPanic", name, threads, got)
			}
			// On the caller, while a helper is inside a chunk: the
			// panic waits for the helper to leave it.
			var inside, entered atomic.Int32
			got = catch(func() {
				job(p, func(w, lo, hi int) {
					if w != 0 {
						inside.Add(1)
						entered.Add(1)
						time.Sleep(20 * time.Millisecond)
						inside.Add(-1)
						return
					}
					for end := time.Now().Add(10 * time.Second); entered.Load() == 0 && time.Now().Before(end); {
						runtime.Gosched()
					}
					panic("caller boom")
				})
			})
			if got != "caller boom" || inside.Load() != 0 {
				t.Fatalf("%s, %d threads, panic on the caller: recovered %v with %d helpers still inside", name, threads, got, inside.Load())
			}
			var covered atomic.Int64
			job(p, func(w, lo, hi int) { covered.Add(int64(hi - lo)) })
			if covered.Load() != 64 {
				t.Fatalf("%s, %d threads: after the panics a job covered %d of 64", name, threads, covered.Load())
			}
			p.Close()
		}
	}
}

// catch runs f and returns what it panicked with (nil if it returned).
func catch(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
