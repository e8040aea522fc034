package errcode

import (
	"context"
	"errors"
)

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
	// a well-formed file using a feature vkllm does not support). Of
	// returns it for an error without a code.
	LoadFailed Code = "LOAD_FAILED"
	// ABIMismatch: a file or driver speaks a version vkllm does not.
	ABIMismatch Code = "ABI_MISMATCH"
	// BadParams: a call's input is invalid (a parameter out of its range,
	// a token outside the vocabulary, an unknown role, a malformed batch,
	// a nil context), or the call is not allowed in the current state.
	BadParams Code = "BAD_PARAMS"
	// EmptyPrompt: the prompt or the conversation is empty.
	EmptyPrompt Code = "EMPTY_PROMPT"
	// PromptTooLong: the prompt does not fit the context of one request.
	PromptTooLong Code = "PROMPT_TOO_LONG"
	// Cancelled: the caller's context was cancelled or timed out.
	Cancelled Code = "CANCELLED"
	// Closed: the LLM, session, Model or Context was closed.
	Closed Code = "CLOSED"
	// QueueFull: too many requests are pending; retry later.
	QueueFull Code = "QUEUE_FULL"
	// CacheFull: the KV cache has too few free cells for a batch.
	CacheFull Code = "CACHE_FULL"
)

// Coder is implemented by errors that carry a Code.
type Coder interface {
	Code() Code
}

// Of returns the code of the first error in err's chain that has one,
// Cancelled for context.Canceled or context.DeadlineExceeded in a chain
// with no code, LoadFailed for any other error, and None for nil.
func Of(err error) Code {
	if err == nil {
		return None
	}
	var c Coder
	if errors.As(err, &c) {
		return c.Code()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Cancelled
	}
	return LoadFailed
}

// New returns an error with the given text and code, for a package's
// sentinel errors (compare them with errors.Is, as any sentinel):
//
//	var ErrClosed = errcode.New(errcode.Closed, "engine: LLM closed")
func New(code Code, text string) error { return &sentinel{code: code, text: text} }

type sentinel struct {
	code Code
	text string
}

func (e *sentinel) Error() string { return e.text }
func (e *sentinel) Code() Code    { return e.code }

// Wrap gives err the code c, for an error of a package that does not
// know its code in the caller's terms (kv.ErrNoSlot is CacheFull when
// Decode returns it). The result has err's text, and errors.Is and
// errors.As see err through it. Wrap(c, nil) is nil.
func Wrap(c Code, err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{code: c, err: err}
}

type wrapped struct {
	code Code
	err  error
}

func (e *wrapped) Error() string { return e.err.Error() }
func (e *wrapped) Code() Code    { return e.code }
func (e *wrapped) Unwrap() error { return e.err }
