package engine

import (
	"fmt"
	"runtime/debug"
)

// PanicError: the engine loop panicked outside the forward pass, in
// sampling, a Constraint, stop strings or detokenising (a vkllm bug, or
// a Constraint's). The requests of the step (or the command) that
// panicked end with it, their cells are freed and the loop goes on; the
// report should carry Stack. A panic inside the forward pass comes as a
// *models.PanicError instead.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("engine: panic outside the forward pass (a vkllm bug; please report it with the stack): %v", e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// drawPanic carries a draw goroutine's panic, with that goroutine's
// stack, to the loop that raises it again (drawAll).
type drawPanic struct {
	value any
	stack []byte
}

// recovered is the *PanicError of a value recover returned.
func recovered(v any) *PanicError {
	if d, ok := v.(*drawPanic); ok {
		return &PanicError{Value: d.value, Stack: d.stack}
	}
	return &PanicError{Value: v, Stack: debug.Stack()}
}
