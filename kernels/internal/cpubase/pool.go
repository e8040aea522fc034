package cpubase

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vkllm/vkllm/kernels"
)

// Pool is a fixed set of helper goroutines, started once per Backend,
// that the ops share instead of starting goroutines for every op. An op
// calls run with a number of tasks; the calling goroutine and the helpers
// take tasks from one atomic counter until none is left, and run returns
// as soon as every task is done. It does not wait for a helper that has
// not woken up yet (on a busy machine one may be descheduled for
// milliseconds): the caller takes the tasks it would have taken, and a
// helper that receives a finished job finds nothing left and drops it.
// Which goroutine runs a task never changes its result: every task
// writes its own outputs.
//
// A helper that finishes a job polls for the next one for a while
// (spinFor) before it blocks, so that the next op of the same decode
// step, usually microseconds later, does not pay for a wake-up; and the
// caller polls for the helpers' last tasks (spinFor) before it blocks on
// the job's channel. A blocked goroutine costs a futex wake-up, tens of
// microseconds on a virtual machine whose idle vCPU halts: more than a
// whole matmul of a small model's decode step.
//
// A panic in fn (a kernel's bug) does not kill the process from a
// helper's goroutine, nor leave helpers writing a dead op's outputs:
// the job stops handing out work, waits until no helper is inside it,
// and the panic goes on in the caller's goroutine (a helper's as a
// *kernels.WorkerPanic carrying its stack), where models.Context.Decode turns it
// into an error. The helpers live on for the next job.
type Pool struct {
	helpers int
	jobs    chan *job // nil when helpers == 0
}

// job is one run or runRanges call.
type job struct {
	fn    func(worker, task int)
	tasks int64
	next  atomic.Int64  // the next task to take
	done  atomic.Int64  // tasks (or, for ranges, items) finished
	fin   chan struct{} // closed when done reaches tasks, or after a panic when active reaches 0
	once  sync.Once     // closes fin

	// After a panic in fn: stop is set (no more claims), failed holds a
	// helper's panic (the caller's own goes on unwinding), and fin closes
	// when active, the goroutines inside work (the caller's included),
	// reaches 0.
	stop   atomic.Bool
	active atomic.Int32
	failed atomic.Pointer[kernels.WorkerPanic]

	// runRanges: items [0, tasks) in len(parts) contiguous parts, part p
	// [ends[p-1], ends[p]) with its next unclaimed item in parts[p].
	rfn   func(worker, lo, hi int)
	chunk int64
	least int64 // < chunk: guided claims (runRangesGuided)
	parts []atomic.Int64
	ends  []int64

	// room for parts and ends up to inlineParts threads, so that a
	// ranges job costs no allocations beyond the job and its channel
	// (every MatMul and Attention of a decode step is one)
	partsIn [inlineParts]atomic.Int64
	endsIn  [inlineParts]int64
}

// inlineParts is how many threads' parts a job holds without allocating.
const inlineParts = 16

// spinFor is how long an idle helper polls for a job, and a caller for
// its job's end (yielding between polls), before it blocks. llama.cpp's
// thread Pool spins likewise between the ops of a graph.
const spinFor = time.Millisecond

// spinChecks is how many polls go between two reads of the clock.
const spinChecks = 64

func NewPool(threads int) *Pool {
	p := &Pool{helpers: threads - 1}
	if p.helpers > 0 {
		p.jobs = make(chan *job, 4*p.helpers)
		for id := 1; id <= p.helpers; id++ {
			go helper(p.jobs, id)
		}
	}
	return p
}

// helper runs jobs as worker id until the channel is closed. It holds
// only the channel, so an unreachable Backend can be collected and its
// cleanup close the channel.
func helper(jobs chan *job, id int) {
	for {
		var j *job
		var ok bool
		start := time.Now()
	poll:
		for i := 1; ; i++ {
			select {
			case j, ok = <-jobs:
				break poll
			default:
				runtime.Gosched()
			}
			if i%spinChecks == 0 && time.Since(start) > spinFor {
				break
			}
		}
		if j == nil {
			if j, ok = <-jobs; !ok {
				return
			}
		} else if !ok {
			return
		}
		j.enter()
		j.helperWork(id)
	}
}

// helperWork is work on a helper's goroutine: a panic there is recorded
// for the caller instead of ending the process.
func (j *job) helperWork(worker int) {
	defer func() {
		if r := recover(); r != nil {
			j.failed.CompareAndSwap(nil, &kernels.WorkerPanic{Value: r, Stack: debug.Stack()})
			j.stop.Store(true)
		}
		j.leave()
	}()
	j.work(worker)
}

// callerWork is work on the caller's goroutine, then the wait for the
// job's end. If fn panics here, the job stops and the panic goes on
// once no helper is inside the job; if a helper panicked, its
// *kernels.WorkerPanic is raised here.
func (j *job) callerWork() {
	j.enter()
	finished := false
	defer func() {
		if !finished { // unwinding fn's panic
			j.stop.Store(true)
			j.leave()
			<-j.fin
		}
	}()
	j.work(0)
	j.leave()
	finished = true
	j.wait()
	if e := j.failed.Load(); e != nil {
		panic(e)
	}
}

// enter and leave count the goroutines inside the job; the last to leave
// a stopped job closes fin.
func (j *job) enter() { j.active.Add(1) }

func (j *job) leave() {
	if j.active.Add(-1) == 0 && j.stop.Load() {
		j.finish()
	}
}

// finish closes fin (once).
func (j *job) finish() { j.once.Do(func() { close(j.fin) }) }

func (j *job) work(worker int) {
	if j.rfn != nil {
		j.workRanges(worker)
		return
	}
	for !j.stop.Load() {
		t := j.next.Add(1) - 1
		if t >= j.tasks {
			return
		}
		j.fn(worker, int(t))
		if j.done.Add(1) == j.tasks {
			j.finish()
		}
	}
}

// Run calls fn(worker, task) for every task in [0, tasks) and returns
// when all calls have returned. worker is in [0, threads) and no two
// concurrent calls share one, so fn may index per-worker scratch by it.
func (p *Pool) Run(tasks int, fn func(worker, task int)) {
	helpers := min(p.helpers, tasks-1)
	if helpers <= 0 {
		for t := range tasks {
			fn(0, t)
		}
		return
	}
	j := &job{fn: fn, tasks: int64(tasks), fin: make(chan struct{})}
	for range helpers {
		select {
		case p.jobs <- j:
		default: // helpers behind on old jobs: the caller does more itself
		}
	}
	j.callerWork()
}

// RunRanges calls fn(worker, lo, hi) on chunks of at most chunk items
// covering [0, n), and returns when all calls have returned. The items are
// split into one contiguous part per thread and worker w starts on part
// w, in order, so that each thread streams through memory (a weight
// matrix's rows) instead of interleaving with the others, which defeats
// the hardware prefetchers; a worker that finishes its part takes chunks
// from the next ones (so a descheduled helper's part still gets done).
func (p *Pool) RunRanges(n, chunk int, fn func(worker, lo, hi int)) {
	p.RunRangesGuided(n, chunk, chunk, fn)
}

// RunRangesGuided is RunRanges with chunks that shrink as a part runs
// out: a claim takes half of what is left of the part, at most chunk
// and at least least items. A thread's part starts with big chunks (few
// claims, long streams) and ends with small ones, so a thread that
// started late or ran slow leaves little for the other to wait on or to
// take.
func (p *Pool) RunRangesGuided(n, chunk, least int, fn func(worker, lo, hi int)) {
	chunk = max(chunk, 1)
	least = min(max(least, 1), chunk)
	helpers := min(p.helpers, (n+chunk-1)/chunk-1)
	if helpers <= 0 {
		for lo := 0; lo < n; lo += chunk {
			fn(0, lo, min(lo+chunk, n))
		}
		return
	}
	parts := helpers + 1
	j := &job{rfn: fn, tasks: int64(n), chunk: int64(chunk), least: int64(least), fin: make(chan struct{})}
	if parts <= inlineParts {
		j.parts, j.ends = j.partsIn[:parts], j.endsIn[:parts]
	} else {
		j.parts, j.ends = make([]atomic.Int64, parts), make([]int64, parts)
	}
	for q := range parts {
		start := int64(q * n / parts)
		j.parts[q].Store(start)
		j.ends[q] = int64((q + 1) * n / parts)
	}
	for range helpers {
		select {
		case p.jobs <- j:
		default:
		}
	}
	j.callerWork()
}

func (j *job) workRanges(worker int) {
	parts := len(j.parts)
	for q := range parts {
		part := (worker + q) % parts
		end := j.ends[part]
		for !j.stop.Load() {
			lo, hi := j.claim(part, end)
			if lo >= end {
				break
			}
			j.rfn(worker, int(lo), int(hi))
			if j.done.Add(hi-lo) == j.tasks {
				j.finish()
			}
		}
	}
}

// claim takes the next chunk [lo, hi) of part (lo ≥ end: none left).
func (j *job) claim(part int, end int64) (lo, hi int64) {
	if j.least == j.chunk {
		lo = j.parts[part].Add(j.chunk) - j.chunk
		return lo, min(lo+j.chunk, end)
	}
	for {
		lo = j.parts[part].Load()
		if lo >= end {
			return lo, lo
		}
		size := min(j.chunk, max(j.least, (end-lo)/2))
		hi = min(lo+size, end)
		if j.parts[part].CompareAndSwap(lo, hi) {
			return lo, hi
		}
	}
}

// wait returns when every task of j is done, or j stopped on a panic and
// no goroutine is inside it: it polls for spinFor, then blocks on j.fin.
func (j *job) wait() {
	start := time.Now()
	for i := 1; j.done.Load() < j.tasks && !(j.stop.Load() && j.active.Load() == 0); i++ {
		runtime.Gosched()
		if i%spinChecks == 0 && time.Since(start) > spinFor {
			<-j.fin
			return
		}
	}
}

// Close stops the helpers; Run must not be called afterwards.
func (p *Pool) Close() {
	if p.jobs != nil {
		close(p.jobs)
		p.jobs = nil
		p.helpers = 0
	}
}

// ThreadsOr returns threads, or GOMAXPROCS when threads ≤ 0.
func ThreadsOr(threads int) int {
	if threads <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return threads
}
