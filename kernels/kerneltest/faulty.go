package kerneltest

import (
	"sync/atomic"

	"github.com/vkllm/vkllm/kernels"
)

// FaultValue is what a Faulty backend panics with unless Value is set.
const FaultValue = "kerneltest: injected MatMul panic"

// Faulty wraps a Backend for fault-injection tests: while Armed is set,
// MatMul panics with Value (FaultValue if nil; a *kernels.WorkerPanic
// stands for a panic a backend raises again from a goroutine of its own)
// on the calling goroutine instead of running; otherwise every op is the wrapped backend's. Tests use it to
// check that a backend bug reaches a caller as an error and loses
// nothing (models.PanicError and what the engine and server make of it).
type Faulty struct {
	kernels.Backend
	Armed atomic.Bool
	Value any
}

// MatMul panics while f is armed, else runs the wrapped backend's.
func (f *Faulty) MatMul(dst, x, w kernels.Tensor) {
	if f.Armed.Load() {
		if f.Value != nil {
			panic(f.Value)
		}
		panic(FaultValue)
	}
	f.Backend.MatMul(dst, x, w)
}
