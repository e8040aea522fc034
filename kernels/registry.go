package kernels

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Options configure a backend when it is opened.
type Options struct {
	// Threads bounds the CPU backend's parallelism (0: GOMAXPROCS).
	Threads int
	// Device picks a GPU by index or name substring ("" = the first).
	Device string
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

// Open opens the named backend. "auto" tries "vulkan" (a real GPU) and
// falls back to "cpu"; a backend reporting Software() true (a CPU
// implementation of Vulkan such as lavapipe) counts as no GPU.
func Open(name string, opts Options) (Backend, error) {
	if name == "auto" {
		if b, err := Open("vulkan", opts); err == nil {
			if s, ok := b.(interface{ Software() bool }); !ok || !s.Software() {
				return b, nil
			}
			b.Close()
		}
		return Open("cpu", opts)
	}
	mu.Lock()
	open, ok := registry[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknownBackend, name, Backends())
	}
	return open(opts)
}
