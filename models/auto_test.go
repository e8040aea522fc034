package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// fakeGPU is a GPU backend that refuses IQ4_NL weights (as the Vulkan
// backend does) and runs everything else on the CPU backend it wraps.
type fakeGPU struct {
	kernels.Backend
	closed bool
}

func (f *fakeGPU) Name() string { return "fakegpu" }

func (f *fakeGPU) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	if w.DType == tensor.IQ4_NL {
		return nil, fmt.Errorf("fakegpu: %w", &tensor.UnsupportedDTypeError{Format: "upload", DType: w.DType.String(), Tensor: w.Name})
	}
	return f.Backend.Upload(w)
}

func (f *fakeGPU) Close() error {
	f.closed = true
	return f.Backend.Close()
}

// withFakeGPU has openBackend give a fakeGPU for names (kernels.Auto
// standing for a real GPU) and returns the fakes it made.
func withFakeGPU(t *testing.T, names ...string) *[]*fakeGPU {
	var made []*fakeGPU
	t.Cleanup(func() { openBackend = kernels.Open })
	openBackend = func(name string, o kernels.Options) (kernels.Backend, error) {
		for _, n := range names {
			if n == name {
				cpu, err := kernels.Open(kernels.CPU, o)
				if err != nil {
					return nil, err
				}
				f := &fakeGPU{Backend: cpu}
				made = append(made, f)
				return f, nil
			}
		}
		return kernels.Open(name, o)
	}
	return &made
}

// TestAutoFallsBackToCPU: with kernels.Auto, a GPU whose backend refuses a
// weight's dtype (IQ4_NL, which only the CPU takes) gives way to the CPU
// backend: the model opens there, decodes, and DescribeBackend says why;
// the GPU backend is closed. A backend named explicitly keeps the error.
func TestAutoFallsBackToCPU(t *testing.T) {
	file := iq4NLModel(t)
	open := func(name string) (*Model, error) {
		g, err := gguf.Parse(file)
		if err != nil {
			t.Fatal(err)
		}
		return OpenGGUF(context.Background(), "iq4nl", g, WithBackendName(name, kernels.Options{Threads: 2}))
	}

	made := withFakeGPU(t, kernels.Auto, "fakegpu")
	m, err := open(kernels.Auto)
	if err != nil {
		t.Fatalf("auto on a GPU without IQ4_NL: %v", err)
	}
	defer m.Close()
	if got := m.Backend().Name(); got != kernels.CPU {
		t.Errorf("backend %q, want %q", got, kernels.CPU)
	}
	if len(*made) != 1 || !(*made)[0].closed {
		t.Errorf("the refused GPU backend is not closed (%d opened)", len(*made))
	}
	d := m.DescribeBackend()
	t.Logf("DescribeBackend: %s", d)
	if !strings.HasPrefix(d, kernels.Describe(m.Backend())) || !strings.Contains(d, "auto's fakegpu refused a weight") || !strings.Contains(d, "IQ4_NL") {
		t.Errorf("DescribeBackend %q does not say auto's GPU refused IQ4_NL", d)
	}
	decodeIQ4(t, m)

	_, err = open("fakegpu")
	var u *tensor.UnsupportedDTypeError
	if !errors.As(err, &u) {
		t.Errorf("the fake GPU named explicitly: %v, want an UnsupportedDTypeError", err)
	}
}

// TestCPUFallbackDecision: only auto, only a backend other than the CPU,
// only a refused dtype.
func TestCPUFallbackDecision(t *testing.T) {
	cpu, err := kernels.Open(kernels.CPU, kernels.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	gpu := &fakeGPU{Backend: cpu}
	refused := fmt.Errorf("models: blk.0: %w", &tensor.UnsupportedDTypeError{Format: "vulkan", DType: "IQ4_NL"})
	for _, c := range []struct {
		name string
		b    kernels.Backend
		err  error
		want bool
	}{
		{kernels.Auto, gpu, refused, true},
		{"vulkan", gpu, refused, false},
		{kernels.Auto, cpu, refused, false},
		{kernels.Auto, gpu, errcode.New(errcode.OOMVRAM, "no room"), false},
		{kernels.Auto, gpu, context.Canceled, false},
	} {
		if got := cpuFallback(c.name, c.b, c.err); got != c.want {
			t.Errorf("cpuFallback(%q, %s, %v) = %v, want %v", c.name, c.b.Name(), c.err, got, c.want)
		}
	}
}
