package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/vkllm/vkllm/internal/mmap"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
	"github.com/vkllm/vkllm/tensor"
)

// Name is the name this backend registers with kernels.Register.
const Name = kernels.CPU

func init() {
	kernels.Register(Name, func(o kernels.Options) (kernels.Backend, error) {
		return NewWith(Options{Threads: o.Threads}), nil
	})
}

// Errors of SetF32, SetI32, GetF32 and GetI32 wrap one of these.
var (
	ErrMismatch = cpubase.ErrMismatch // the host slice's length or the tensor's dtype does not fit
	ErrForeign  = cpubase.ErrForeign  // not a live tensor of a CPU backend
)

// Tensor is a CPU tensor (kernels/internal/cpubase's, shared with
// kernels/cpuref).
type Tensor = cpubase.Tensor

// Backend is the fast CPU backend: kernels/cpuref's storage and shared
// ops (cpubase.Base) with its own MatMul, MatMuls, Attention, RMSNorm
// and SwiGLU. Like every Backend it is used from one goroutine at a
// time; each op splits its own work across the goroutines of its pool.
type Backend struct {
	*cpubase.Base
	scratch fastScratch // buffers, reused across ops
	packed  *mmap.Arena // the packed weights' memory
}

// packedRegionBytes is the size of the packed weights' shared mappings:
// a few per model, each filled by the weights uploaded one after another.
const packedRegionBytes = 64 << 20

// Options configure NewWith.
type Options struct {
	// Threads bounds the parallelism (0 or less: GOMAXPROCS).
	Threads int
}

// New returns the fast backend running each op on up to threads
// goroutines (0 or less: GOMAXPROCS).
func New(threads int) *Backend { return NewWith(Options{Threads: threads}) }

// NewWith returns a fast backend configured by o. Its helper goroutines
// stop on Close, or when the Backend is garbage collected.
func NewWith(o Options) *Backend {
	return &Backend{Base: cpubase.NewBase(Name, o.Threads), packed: mmap.NewArena(packedRegionBytes)}
}

// Upload implements kernels.Backend. The tensor keeps w.Data, a view of
// the weight file's mapping, so the caller must keep the file open
// (models.Model keeps its Source open) and unmodified for as long as the
// backend tensor is used. Q8_0, Q4_0, Q4_1 and Q4_K weights (with
// AVX-512 VNNI also Q5_0, Q5_K, Q6_K, IQ4_NL and IQ4_XS) are also copied
// into the packed layout where the machine has packed kernels
// (see the package documentation), which costs their size in memory. Any
// dtype tensor.Dequantize knows is accepted. Shapes of more than two
// dimensions are viewed as (product of the leading ones, last).
func (b *Backend) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	t, err := cpubase.Weight(w)
	if err != nil {
		return nil, err
	}
	rows, cols, rb := t.Rows, t.Cols, t.RowBytes
	if x1, _ := packedKernels(w.DType); x1 != nil && rows > 0 && cols > 0 {
		nb := cols / packValues(w.DType)
		groups := (rows + 7) / 8
		// Outside the Go heap, on transparent huge pages where the kernel
		// gives them: decode streams the packed weight once per token,
		// and 2 MiB pages made that 20–30 % faster (Llama-1B Q4_0 at two
		// threads, 47–54 → 60–62 tok/s in alternating runs). The weights
		// share a few mappings (mmap.Arena), so that those under 2 MiB
		// and the tails of the others are on 2 MiB pages too.
		pk, release := b.packed.Alloc(groups * nb * packBlockBytes(w.DType))
		t.Packed, t.PackedFree = pk, sync.OnceValue(release)
		runtime.AddCleanup(t, func(f func() error) { _ = f() }, t.PackedFree)
		b.Parallel(groups, func(g0, g1 int) { pack8(w.DType, w.Data, rows, rb, nb, t.Packed, g0, g1) })
	} else {
		b.Touch(t)
	}
	return t, nil
}

// Describe implements kernels.Describer: the SIMD kernels and threads.
func (b *Backend) Describe() string { return fmt.Sprintf("%s, %d threads", SIMD(), b.Threads) }

// dot is the reference's dot product (cpubase.Dot): the pure-Go F32 dot
// where the machine has no SIMD kernel for it.
func dot(a, b []float32) float32 { return cpubase.Dot(a, b) }
