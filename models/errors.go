package models

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vkllm/vkllm/errcode"
)

// ErrFilesClosed: Files.Check was called after Files.Close.
var ErrFilesClosed = errors.New("models: files are closed")

// NotFoundError: a path, or a file a model folder needs, does not exist.
type NotFoundError struct {
	Path string
	What string // "model", "config.json", "weights", …
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("models: %s not found: %s", e.What, e.Path)
}

// Code implements errcode.Coder.
func (e *NotFoundError) Code() errcode.Code { return errcode.LoadFailed }

// AmbiguousError: a folder holds several weight files and no index that
// says how they belong together.
type AmbiguousError struct {
	Dir   string
	Files []string
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("models: ambiguous weights in %s: %d files (%s) and no *.safetensors.index.json",
		e.Dir, len(e.Files), strings.Join(e.Files, ", "))
}

// Code implements errcode.Coder.
func (e *AmbiguousError) Code() errcode.Code { return errcode.LoadFailed }

// UnsupportedArchError: the model's architecture is not one vkllm runs.
type UnsupportedArchError struct {
	Arch      string
	Supported []string
}

func (e *UnsupportedArchError) Error() string {
	return fmt.Sprintf("model architecture %q is not supported; supported: %v", e.Arch, e.Supported)
}

// Code implements errcode.Coder.
func (e *UnsupportedArchError) Code() errcode.Code { return errcode.ArchUnsupported }

// ConfigError: a model configuration (config.json or GGUF metadata) is
// malformed, or asks for something vkllm does not implement.
type ConfigError struct {
	Path        string // file, if any
	Field       string // the offending field, if one
	Reason      string
	Unsupported bool // a valid setting vkllm does not implement (LOAD_FAILED), not a corrupt one
}

func (e *ConfigError) Error() string {
	s := "models: config"
	if e.Path != "" {
		s += " " + e.Path
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Reason
}

// Code implements errcode.Coder.
func (e *ConfigError) Code() errcode.Code {
	if e.Unsupported {
		return errcode.LoadFailed
	}
	return errcode.ModelCorrupt
}

// WeightError: a weight is missing, or its shape or dtype does not fit the
// configuration.
type WeightError struct {
	Name   string
	Reason string
}

func (e *WeightError) Error() string {
	return fmt.Sprintf("models: weight %q: %s", e.Name, e.Reason)
}

// Code implements errcode.Coder.
func (e *WeightError) Code() errcode.Code { return errcode.ModelCorrupt }

// PanicError: a forward pass panicked inside the backend or the decoder.
// That is a bug in vkllm (an op met operands that break its contract), not
// bad input, and the report should carry Stack. Decode returns it wrapped,
// with the cache rolled back as for any other error; the backend's own
// state after the panic is not guaranteed, so a service should close the
// Model and open it again.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack (a backend worker's, from its kernels.WorkerPanic)
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("models: forward pass panicked (a vkllm bug; please report it with the stack): %v", e.Value)
}

// Unwrap returns the panic value when it is an error (a runtime error, say).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
