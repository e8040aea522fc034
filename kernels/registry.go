package kernels

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/vkllm/vkllm/errcode"
)

// The names of the backends this module registers (each by its package's
// init, as a database/sql driver), and Auto.
const (
	CPU    = "cpu"     // kernels/cpu: the fast CPU path, what users get
	CPURef = "cpu-ref" // kernels/cpuref: the exact oracle, held to transformers
	Vulkan = "vulkan"  // kernels/vulkan: any GPU with a Vulkan driver
	Auto   = "auto"    // Open: a real GPU through Vulkan if registered and present, else CPU
)

// Options configure a backend when it is opened.
type Options struct {
	// Threads bounds the CPU backend's parallelism (0: GOMAXPROCS).
	Threads int
	// Device picks a GPU by index or name substring ("" = the best: see
	// the backend's package).
	Device string
	// Need is the device memory the caller will place on a GPU backend
	// (a model's weights; 0: unknown): with Device "", it picks a device
	// that has that much free and fails with errcode OOM_VRAM where none
	// has.
	Need int64
}

// OpenFunc opens a backend; backends register one with Register.
type OpenFunc func(Options) (Backend, error)

var (
	mu       sync.Mutex
	registry = map[string]OpenFunc{}
)

// ErrUnknownBackend is returned by Open for a name nobody registered.
var ErrUnknownBackend = errors.New("kernels: unknown backend")

// Register makes a backend available under name. It panics if called twice
// with the same name (a programmer error at init time).
func Register(name string, open OpenFunc) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("kernels: Register called twice for " + name)
	}
	registry[name] = open
}

// Backends lists the registered names, sorted.
func Backends() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Known reports whether Open knows name: a registered backend or Auto.
func Known(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	_, ok := registry[name]
	return ok || name == Auto
}

// Names lists what Open takes: Auto and the registered names.
func Names() []string { return append([]string{Auto}, Backends()...) }

// Open opens the named backend. Auto tries Vulkan (a real GPU, when
// kernels/vulkan is imported) and falls back to CPU; a backend reporting
// Software() true (a CPU implementation of Vulkan such as lavapipe)
// counts as no GPU. A GPU present with less free memory than opts.Need
// is an error (errcode OOM_VRAM, saying what each device has free), not
// a silent fall back to the CPU.
func Open(name string, opts Options) (Backend, error) {
	if name == Auto {
		b, err := Open(Vulkan, opts)
		if err == nil {
			if s, ok := b.(interface{ Software() bool }); !ok || !s.Software() {
				return b, nil
			}
			b.Close()
		} else if sw := (interface{ Software() bool })(nil); errcode.Of(err) == errcode.OOMVRAM && !(errors.As(err, &sw) && sw.Software()) {
			return nil, err // a GPU without room for the model
		}
		if !registered(CPU) {
			return nil, fmt.Errorf("%w %q: no GPU, and no CPU backend imported (import _ \"github.com/vkllm/vkllm/kernels/cpu\")", ErrUnknownBackend, CPU)
		}
		return Open(CPU, opts)
	}
	mu.Lock()
	open, ok := registry[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownBackend, name, Names())
	}
	return open(opts)
}

// Describer is a Backend that says what it runs on, for a log line:
// the CPU backends their SIMD level and threads, Vulkan its device.
type Describer interface {
	Describe() string
}

// Describe returns b's name and, for a Describer, what it runs on:
// "cpu (avx2+fma, 2 threads)".
func Describe(b Backend) string {
	if d, ok := b.(Describer); ok {
		return b.Name() + " (" + d.Describe() + ")"
	}
	return b.Name()
}

// registered reports whether a backend of that name is registered.
func registered(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	_, ok := registry[name]
	return ok
}
