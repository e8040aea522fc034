package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// pool is a fixed set of helper goroutines, started once per Backend,
// that the ops share instead of starting goroutines for every op. An op
// calls run with a number of tasks; the calling goroutine and up to
// threads−1 helpers take tasks from one atomic counter until none is left
// (so a helper slowed down by another process on the machine just takes
// fewer tasks), and run returns when all are done. Which goroutine runs
// a task never changes its result: every task writes its own outputs.
type pool struct {
	helpers int
	jobs    chan *job // nil when helpers == 0
	free    sync.Pool // *job, reused across ops
}

// job is one run call. Helpers receive it by channel; worker ids are
// 0 for the caller and 1…helpers for the helpers that joined.
type job struct {
	fn     func(worker, task int)
	tasks  int64
	next   atomic.Int64
	worker atomic.Int32
	wg     sync.WaitGroup
}

func newPool(threads int) *pool {
	p := &pool{helpers: threads - 1}
	if p.helpers > 0 {
		p.jobs = make(chan *job, p.helpers)
		for range p.helpers {
			go helper(p.jobs)
		}
	}
	return p
}

// helper runs jobs until the channel is closed. It holds only the
// channel, so an unreachable Backend can be collected and its cleanup
// close the channel.
func helper(jobs chan *job) {
	for j := range jobs {
		j.work(int(j.worker.Add(1)))
		j.wg.Done()
	}
}

func (j *job) work(worker int) {
	for {
		t := j.next.Add(1) - 1
		if t >= j.tasks {
			return
		}
		j.fn(worker, int(t))
	}
}

// run calls fn(worker, task) for every task in [0, tasks) and returns
// when all calls have returned. worker is in [0, threads) and no two
// concurrent calls share one, so fn may index per-worker scratch by it.
func (p *pool) run(tasks int, fn func(worker, task int)) {
	helpers := min(p.helpers, tasks-1)
	if helpers <= 0 {
		for t := range tasks {
			fn(0, t)
		}
		return
	}
	j, _ := p.free.Get().(*job)
	if j == nil {
		j = new(job)
	}
	j.fn, j.tasks = fn, int64(tasks)
	j.next.Store(0)
	j.worker.Store(0)
	j.wg.Add(helpers)
	for range helpers {
		p.jobs <- j
	}
	j.work(0)
	j.wg.Wait()
	j.fn = nil
	p.free.Put(j)
}

// close stops the helpers; run must not be called afterwards.
func (p *pool) close() {
	if p.jobs != nil {
		close(p.jobs)
		p.jobs = nil
		p.helpers = 0
	}
}

// threadsOr returns threads, or GOMAXPROCS when threads ≤ 0.
func threadsOr(threads int) int {
	if threads <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return threads
}
