package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// Errors of a Model's lifetime.
var (
	// ErrContextsOpen: Close was called while Contexts of the model are
	// open. Nothing was freed; close them and call Close again.
	ErrContextsOpen = errcode.New(errcode.BadParams, "models: contexts of the model are still open")
	// ErrModelClosed: NewContext on a closed Model.
	ErrModelClosed = errcode.New(errcode.Closed, "models: model closed")
)

// Model is an opened model whose weights live on a backend. It is safe to
// share between Contexts (each owns its cache); the weights are read-only.
type Model struct {
	Files  *Files
	Config *Config

	backend    kernels.Backend
	ownBackend bool
	fellBack   string // why auto's GPU gave way to the CPU (cpuFallback), else ""
	w          *weights
	rope       kernels.RoPE
	// run lets one Context at a time use the backend: a kernels.Backend
	// is used from one goroutine at a time, and every Context of the
	// Model (NewContext may make several) shares it.
	run sync.Mutex

	mu       sync.Mutex // guards the three below
	open     int        // Contexts made and not closed
	closed   bool
	adapters []*adapter // LoRA adapters: AdapterID i is adapters[i-1]
}

type options struct {
	backend     kernels.Backend
	backendName string
	kopts       kernels.Options
	progress    func(done, total int64)
}

// Option configures Open.
type Option func(*options)

// WithBackend runs the model on b. The caller keeps ownership of b.
func WithBackend(b kernels.Backend) Option { return func(o *options) { o.backend = b } }

// WithBackendName opens the named backend (kernels.Auto, kernels.CPU,
// kernels.CPURef, kernels.Vulkan or another registered name); the model
// closes it on Close. The default is kernels.Auto: a real GPU through
// Vulkan where kernels/vulkan is imported and finds one, else the fast
// CPU path; a model with a weight type the GPU backend refuses (IQ4_NL,
// IQ4_XS) then loads on the CPU instead, and Model.DescribeBackend says so.
func WithBackendName(name string, opts kernels.Options) Option {
	return func(o *options) { o.backendName, o.kopts = name, opts }
}

// WithProgress has Open call f after each weight is on the backend, with
// the bytes of the file's weights uploaded so far and their total. f runs
// on Open's goroutine; the last call has done == total.
func WithProgress(f func(done, total int64)) Option {
	return func(o *options) { o.progress = f }
}

// Open opens a HF model folder or a GGUF file and puts its weights on a
// backend. See OpenFiles for the folder rules. Cancelling ctx stops the
// upload between two weights: Open frees what it uploaded and returns an
// error wrapping ctx.Err().
func Open(ctx context.Context, path string, opts ...Option) (*Model, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrBadParams)
	}
	o := options{backendName: kernels.Auto}
	for _, f := range opts {
		f(&o)
	}
	files, err := OpenFiles(path)
	if err != nil {
		return nil, err
	}
	return open(ctx, files, o)
}

// OpenGGUF opens a GGUF file already parsed (gguf.Parse of bytes in memory,
// such as a model built by a benchmark) and puts its weights on a backend,
// as Open does for a file; name stands for the path in Files.Path and
// errors. The Model owns g: its Close closes g, and so does a failed
// OpenGGUF.
func OpenGGUF(ctx context.Context, name string, g *gguf.File, opts ...Option) (*Model, error) {
	if ctx == nil || g == nil {
		return nil, fmt.Errorf("%w: nil context or file", ErrBadParams)
	}
	o := options{backendName: kernels.Auto}
	for _, f := range opts {
		f(&o)
	}
	cfg, err := ConfigFromGGUF(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	var size int64
	for _, t := range g.Tensors() {
		size += int64(len(t.Data))
	}
	files := &Files{Path: name, Format: FormatGGUF, Arch: archs[cfg.Arch], Config: cfg, Weights: g, Size: size, GGUF: g}
	return open(ctx, files, o)
}

// open puts files' weights on the backend o names and owns files.
func open(ctx context.Context, files *Files, o options) (*Model, error) {
	var err error
	m := &Model{Files: files, Config: files.Config, backend: o.backend}
	if m.backend == nil {
		o.kopts.Need = files.Size // a GPU backend picks a device with room for the weights
		if m.backend, err = openBackend(o.backendName, o.kopts); err != nil {
			files.Close()
			return nil, fmt.Errorf("models: %w", err)
		}
		m.ownBackend = true
	}
	m.w, err = loadWeights(ctx, files, m.backend, o.progress)
	if err != nil && m.ownBackend && cpuFallback(o.backendName, m.backend, err) {
		// loadWeights freed what it uploaded; the CPU takes every dtype.
		why := kernels.Describe(m.backend) + " refused a weight: " + firstLine(err)
		m.backend.Close()
		if m.backend, err = openBackend(kernels.CPU, o.kopts); err != nil {
			m.backend = nil
			m.Close()
			return nil, fmt.Errorf("models: %w", err)
		}
		m.fellBack = why
		m.w, err = loadWeights(ctx, files, m.backend, o.progress)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	m.rope = ropeOf(files, m.w.freqFactors)
	return m, nil
}

// openBackend is kernels.Open (a variable for a test's fake GPU).
var openBackend = kernels.Open

// cpuFallback reports whether a model that failed to load on b with err
// should be loaded on the CPU instead: b was opened by kernels.Auto, is
// not the CPU, and refused a weight's dtype (*tensor.UnsupportedDTypeError:
// a GPU backend takes fewer weight types than the CPU, e.g. not IQ4_NL).
// Any other failure (a bad file, a full GPU, a cancelled load) stands.
func cpuFallback(name string, b kernels.Backend, err error) bool {
	var u *tensor.UnsupportedDTypeError
	return name == kernels.Auto && b.Name() != kernels.CPU && errors.As(err, &u)
}

// firstLine is err's message up to its first newline.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// DescribeBackend is kernels.Describe of the backend the weights live on,
// and, where kernels.Auto's GPU refused a weight type so that the model
// went to the CPU instead, why: "cpu (avx2+fma, 2 threads), as auto's
// vulkan (…) refused a weight: …". Logs and run summaries print it.
func (m *Model) DescribeBackend() string {
	d := kernels.Describe(m.backend)
	if m.fellBack != "" {
		d += ", as auto's " + m.fellBack
	}
	return d
}

// ropeOf derives the RoPE of a model. llama.cpp's converter permutes the Q
// and K rows of Llama models so that its "normal" layout (adjacent pairs)
// equals HF's rotate_half; rather than undo the permutation at load time,
// vkllm runs such GGUF files with RoPENormal. Everything else uses NeoX.
func ropeOf(f *Files, freqFactors []float32) kernels.RoPE {
	c := f.Config
	r := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: c.HeadDim, Theta: c.RoPETheta, FreqFactors: freqFactors}
	if f.Format == FormatGGUF && f.Arch.GGUFPermutedQK {
		r.Style = kernels.RoPENormal
	}
	if s := c.RoPEScaling; s != nil && freqFactors == nil {
		switch s.Type {
		case "linear":
			r.Scaling, r.Factor = kernels.RoPEScaleLinear, s.Factor
		case "llama3":
			r.Scaling, r.Factor = kernels.RoPEScaleLlama3, s.Factor
			r.LowFreqFactor, r.HighFreqFactor = s.LowFreqFactor, s.HighFreqFactor
			r.OriginalMaxPositions = s.OriginalMaxPositions
		}
	}
	return r
}

// Backend is the backend the weights live on.
func (m *Model) Backend() kernels.Backend { return m.backend }

// Close frees the weights, closes the backend if Open opened it and unmaps
// the files. While Contexts of the model are open it frees nothing and
// returns an error wrapping ErrContextsOpen: their caches live on the
// backend and a Decode on them would use freed memory. Close the Contexts
// first (their owners may be other goroutines), then the Model. Closing
// a closed Model does nothing.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open > 0 {
		return fmt.Errorf("%w: %d; close them first", ErrContextsOpen, m.open)
	}
	if m.closed {
		return nil
	}
	m.closed = true
	if m.w != nil && m.backend != nil {
		m.w.free(m.backend)
		m.w = nil
	}
	for _, ad := range m.adapters {
		if m.backend != nil {
			ad.free(m.backend)
		}
	}
	m.adapters = nil
	var err error
	if m.ownBackend && m.backend != nil {
		err = m.backend.Close()
		m.backend = nil
	}
	if m.Files != nil {
		if e := m.Files.Close(); err == nil {
			err = e
		}
	}
	return err
}
