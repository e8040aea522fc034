package benchcmd

import (
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vkllm/vkllm/internal/mmap"
)

// readBandwidth is a STREAM-like read test: threads goroutines each
// read their part of a 512 MiB buffer (huge pages where the kernel gives
// them) as fast as they can, with no arithmetic to wait for, in the two
// ways the decode kernels read a weight: as one sequential stream with
// every cache line prefetched ahead (readAll: the F16 and BF16 one-row
// kernels, the short ends of packed ones) and as four streams side by
// side (readAll4: the packed one-row kernels, and about the F16 decode
// tiles' four rows). The best of 20 passes of each, in GB/s of the
// buffer read.
func readBandwidth(threads int) float64 {
	p := newProbe(threads, 512<<20)
	defer p.release()
	for range 40 {
		p.pass()
	}
	return p.best
}

// probePass reads buf once on threads threads, each its part, as one
// stream a thread (even passes) or four (odd), and returns GB/s.
func probePass(buf []byte, threads, pass int) float64 {
	read := readAll
	if pass%2 == 1 {
		read = readAll4
	}
	sums := make([]uint64, threads)
	var wg sync.WaitGroup
	chunk := len(buf) / threads &^ 255
	t0 := time.Now()
	for w := range threads {
		part := buf[w*chunk : (w+1)*chunk]
		wg.Go(func() { sums[w] = read(part) })
	}
	wg.Wait()
	sec := time.Since(t0).Seconds()
	var sink uint64
	for _, s := range sums {
		sink ^= s
	}
	runtime.KeepAlive(sink)
	return float64(chunk*threads) / sec / 1e9
}

// probe is a read-bandwidth probe: its buffer and the best of its passes
// so far. readBandwidth makes one of 512 MiB; the decode's window probe
// one of windowBytes.
type probe struct {
	buf     []byte
	free    func() error
	threads int
	passes  int
	best    float64 // GB/s
}

// The window probe: a pass every windowEvery decode steps over
// windowBytes, twice this project's VMs' L3 cache, so that each pass
// reads memory. (Where the last-level cache holds 64 MiB, a pass reads
// cache and overstates the bandwidth: the window fraction then errs low.)
const (
	windowEvery = 8
	windowBytes = 64 << 20
)

// windowQuiet is how long the decode waits before a window pass, so that
// the backend's threads are idle: kernels/cpu's helpers poll for their
// next op for up to 1 ms before they sleep, and a pass that started at
// once had one reader wait for that poll to end (it read 25–31 GB/s where
// passes on an idle process read 27–39).
const windowQuiet = 2 * time.Millisecond

// newProbe maps and touches size bytes: outside the Go heap, on
// transparent huge pages where the kernel gives them (as the fast path's
// packed weights are), every page with data that is not zero.
func newProbe(threads, size int) *probe {
	buf, free := mmap.Anon(size)
	for i := range buf {
		buf[i] = byte(i)
	}
	return &probe{buf: buf, free: free, threads: threads}
}

// pass reads the buffer once (probePass) and keeps the best rate.
func (p *probe) pass() {
	p.best = max(p.best, probePass(p.buf, p.threads, p.passes))
	p.passes++
}

// release unmaps the buffer (once; later calls do nothing).
func (p *probe) release() {
	if p.buf != nil {
		p.free()
		p.buf = nil
	}
}

// readAllGo XORs b into one word, eight words at a time.
func readAllGo(b []byte) uint64 {
	var s [8]uint64
	for len(b) >= 64 {
		for i := range s {
			s[i] ^= binary.LittleEndian.Uint64(b[8*i:])
		}
		b = b[64:]
	}
	for _, c := range b {
		s[0] ^= uint64(c)
	}
	return s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4] ^ s[5] ^ s[6] ^ s[7]
}

// peakRSSMB is VmHWM from /proc/self/status in MiB (0 where there is none).
func peakRSSMB() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// resetPeakRSS sets the RSS high-water mark to the present RSS (Linux's
// clear_refs); where that fails, the mark keeps what it had.
func resetPeakRSS() error { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], " ")
}
