// Package errcode gives every error the library returns one of a few stable
// codes that callers can switch on without matching strings.
//
//	switch errcode.Of(err) {
//	case errcode.PromptTooLong: ...
//	case errcode.ModelCorrupt: ...
//	}
//
// The codes, and the errors that carry them:
//
//	OOM_VRAM          the device ran out of memory
//	MODEL_CORRUPT     a model file is malformed, truncated or lies about sizes
//	ARCH_UNSUPPORTED  the model architecture is not one vkllm runs
//	LOAD_FAILED       loading failed otherwise; also any error with no code
//	ABI_MISMATCH      a file or driver speaks a version vkllm does not
//	BAD_PARAMS        a call's input is invalid: a sampling parameter out of
//	                  its range (*sampler.FieldError, from the engine), a
//	                  prompt token outside the vocabulary, an unknown
//	                  message role, a nil context.Context, a malformed
//	                  batch, ContextParams or Options out of range; or a
//	                  call made when it may not be (a second turn on a busy
//	                  session, closing a Model whose Contexts are open)
//	EMPTY_PROMPT      the prompt (or the conversation) is empty
//	PROMPT_TOO_LONG   the prompt does not fit the context of one request
//	CANCELLED         the caller's context was cancelled or its deadline
//	                  passed (context.Canceled, context.DeadlineExceeded)
//	CLOSED            the LLM, session, Model or Context is closed
//	QUEUE_FULL        the LLM has as many pending requests as it accepts
//	CACHE_FULL        the KV cache has too few free cells for a batch
//	                  (kv.ErrNoSlot, from models.Context.Decode)
//
// A typed error opts in by implementing Coder; a sentinel made with New
// carries its code; Wrap gives a code to another package's error. Of walks
// the %w chain. This package is a leaf: every other package may import it.
package errcode
