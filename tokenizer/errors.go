package tokenizer

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/errcode"
)

// Sentinel errors; the typed errors below wrap them, so errors.Is works.
var (
	// ErrUnsupported: a well-formed file asks for a component or option this
	// package does not implement (a Unigram model, a Precompiled normalizer…).
	ErrUnsupported = errors.New("tokenizer: unsupported")
	// ErrFormat: a tokenizer file is malformed or inconsistent.
	ErrFormat = errors.New("tokenizer: malformed tokenizer file")
	// ErrNoVocabulary: the file has no tokenizer by design (a GGUF whose
	// tokenizer.ggml.model is llama.cpp's "no_vocab", such as benchmark
	// models): its model runs token ids only.
	ErrNoVocabulary = errors.New("tokenizer: the file has no vocabulary")
	// ErrInvalidUTF8: Encode was given a string that is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("tokenizer: input is not valid UTF-8")
)

// UnsupportedError names a component type (or option) that is not
// implemented, e.g. {Component: "pre_tokenizer", Type: "Whitespace"}.
type UnsupportedError struct {
	Component string // "model", "normalizer", "pre_tokenizer", "decoder", "post_processor", "gguf"…
	Type      string // the "type" value found in the file, or the option
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer: unsupported %s type %q", e.Component, e.Type)
}

// Unwrap makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Code implements errcode.Coder.
func (e *UnsupportedError) Code() errcode.Code { return errcode.LoadFailed }

// FormatError reports a malformed tokenizer file: where (a JSON path such as
// "model.merges[12]" or a GGUF key) and what is wrong.
type FormatError struct {
	Where string
	Err   error
}

func (e *FormatError) Error() string {
	if e.Where == "" {
		return fmt.Sprintf("%v: %v", ErrFormat, e.Err)
	}
	return fmt.Sprintf("%v: %s: %v", ErrFormat, e.Where, e.Err)
}

// Unwrap returns both the sentinel and the cause.
func (e *FormatError) Unwrap() []error { return []error{ErrFormat, e.Err} }

// Code implements errcode.Coder.
func (e *FormatError) Code() errcode.Code { return errcode.ModelCorrupt }

func formatErr(where, f string, args ...any) error {
	return &FormatError{Where: where, Err: fmt.Errorf(f, args...)}
}

// InvalidUTF8Error is returned by Encode for input that is not valid UTF-8.
type InvalidUTF8Error struct {
	Offset int // byte offset of the first invalid byte
}

func (e *InvalidUTF8Error) Error() string {
	return fmt.Sprintf("%v (first bad byte at offset %d)", ErrInvalidUTF8, e.Offset)
}

// Unwrap makes errors.Is(err, ErrInvalidUTF8) true.
func (e *InvalidUTF8Error) Unwrap() error { return ErrInvalidUTF8 }
