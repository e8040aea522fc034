// Package errcode gives every error the library returns one of a few stable
// codes that callers can switch on without matching strings.
//
//	switch errcode.Of(err) {
//	case errcode.ModelCorrupt: ...
//	}
//
// A typed error opts in by implementing Coder; errcode.Of walks the %w chain.
// This package is a leaf: every other package may import it.
package errcode

import "errors"

// Code is a stable, machine-readable error class.
type Code string

const (
	// None is returned by Of for a nil error.
	None Code = ""
	// OOMVRAM: the device ran out of memory.
	OOMVRAM Code = "OOM_VRAM"
	// ModelCorrupt: a model file is malformed, truncated or lies about sizes.
	ModelCorrupt Code = "MODEL_CORRUPT"
	// ArchUnsupported: the model architecture is not one vkllm runs.
	ArchUnsupported Code = "ARCH_UNSUPPORTED"
	// LoadFailed: loading failed for another reason (missing files, I/O,
	// a well-formed file using a feature vkllm does not support).
	LoadFailed Code = "LOAD_FAILED"
	// ABIMismatch: a file or driver speaks a version vkllm does not.
	ABIMismatch Code = "ABI_MISMATCH"
)

// Coder is implemented by errors that carry a Code.
type Coder interface {
	Code() Code
}

// Of returns the code of the first error in err's chain that has one,
// LoadFailed if none does, and None for a nil error.
func Of(err error) Code {
	if err == nil {
		return None
	}
	var c Coder
	if errors.As(err, &c) {
		return c.Code()
	}
	return LoadFailed
}
