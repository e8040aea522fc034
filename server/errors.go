package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// apiError is an error in OpenAI's shape with the HTTP status it goes out with.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
	// RetryAfter, in seconds, is sent as the Retry-After header when > 0.
	RetryAfter int `json:"-"`
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// badParam is a 400 naming the offending field.
func badParam(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error",
		Message: fmt.Sprintf(format, args...), Param: strp(param), Code: strp("invalid_value")}
}

func newError(status int, typ, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Type: typ, Code: strp(code), Message: fmt.Sprintf(format, args...)}
}

// writeError sends e as {"error": {...}}.
func writeError(w http.ResponseWriter, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(struct {
		Error *apiError `json:"error"`
	}{e})
}

// errNoToolCall answers a forced call the reply does not hold
// (engine.ErrNoToolCall).
var errNoToolCall = newError(http.StatusInternalServerError, "server_error", "tool_call_failed",
	"tool_choice asked for a tool call, and the model's reply is not a valid call of an offered tool")

// engineError maps an error of the engine (or of rendering a prompt) to
// its HTTP answer. promptParam names the request field holding the prompt.
// An error that is no fault of the request (500) is also logged with
// logf, with the stack of a panic in the forward pass (the answer carries
// only its message).
func engineError(err error, promptParam string, logf func(string, ...any)) *apiError {
	var ae *apiError
	var fe *sampler.FieldError
	var te *chat.TemplateError
	var ue *tokenizer.InvalidUTF8Error
	var re *engine.RoleError
	var tse *engine.ToolSchemaError
	var ce *engine.ContentError
	var tne *engine.ToolNameError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &re):
		return badParam(fmt.Sprintf("messages[%d].role", re.Index), "%v", err)
	case errors.As(err, &ce):
		return badParam(fmt.Sprintf("messages[%d].content[%d].type", ce.Index, ce.Part), "%v", err)
	case errors.As(err, &tne):
		return toolNameError(tne, "tools[%d].function.name")
	case errors.As(err, &tse):
		return badParam(fmt.Sprintf("tools[%d].function.parameters", tse.Index), "%v", err)
	case errors.Is(err, engine.ErrToolChoice):
		return badParam("tool_choice", "%v", err)
	case errors.Is(err, engine.ErrResponseFormat):
		return badParam("response_format", "%v", err)
	case errors.Is(err, engine.ErrStopCutCall):
		return badParam("stop", "a stop string ended the reply before the forced tool call (tool_choice) was complete")
	case errors.Is(err, engine.ErrNoToolCall):
		return errNoToolCall
	case errors.Is(err, errors.ErrUnsupported):
		return badParam("model", "the model does not support this: %v", err)
	case errors.As(err, &fe):
		return badParam(fe.Field, "%s", fe.Error())
	case errors.Is(err, sampler.ErrEmptyPrompt):
		return badParam(promptParam, "the prompt is empty")
	case errors.Is(err, engine.ErrQueueFull):
		e := newError(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "the server is busy: %v; retry in 1s", err)
		e.RetryAfter = 1
		return e
	case errors.Is(err, engine.ErrClosed):
		e := newError(http.StatusServiceUnavailable, "server_error", "model_unavailable", "the model is shutting down")
		e.RetryAfter = 1
		return e
	case errors.Is(err, engine.ErrTooManyChoices):
		return badParam("n", "%v", err)
	case errors.Is(err, engine.ErrBadToken), errors.Is(err, engine.ErrPromptTooLong):
		return badParam(promptParam, "%v", err)
	case errors.As(err, &te), errors.Is(err, chat.ErrRender), errors.Is(err, chat.ErrBadKwarg), errors.As(err, &ue):
		return badParam(promptParam, "%v", err)
	}
	logInternal(logf, err)
	return newError(http.StatusInternalServerError, "server_error", "internal_error", "%v", err)
}

// toolNameError answers a tool name given twice; field is the tool's
// name field, a format of its index.
func toolNameError(e *engine.ToolNameError, field string) *apiError {
	return badParam(fmt.Sprintf(field, e.Index), "the tool name %q is given twice", e.Name)
}

// logInternal logs err, and the stack of a panic it carries: in the
// forward pass (models.PanicError: the panicking goroutine's, a backend
// worker's included) or elsewhere in the engine loop (engine.PanicError).
func logInternal(logf func(string, ...any), err error) {
	logf("internal error: %v", err)
	var pe *models.PanicError
	var ee *engine.PanicError
	switch {
	case errors.As(err, &pe):
		logf("forward pass panic stack:\n%s", pe.Stack)
	case errors.As(err, &ee):
		logf("engine loop panic stack:\n%s", ee.Stack)
	}
}
