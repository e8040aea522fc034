package chat

import (
	"errors"
	"fmt"
)

var (
	// ErrEmptyConversation is returned by Render for an Input without messages
	// (transformers refuses them too).
	ErrEmptyConversation = errors.New("chat: empty conversation")
	// ErrRender wraps every failure of a template at render time other than
	// raise_exception (which is a *TemplateError): an unknown filter, a
	// type error, an internal panic of the template engine.
	ErrRender = errors.New("chat: render failed")
	// ErrOutputTooLarge is wrapped by ErrRender when a rendering passes
	// MaxOutputBytes.
	ErrOutputTooLarge = errors.New("chat: rendered prompt too large")
	// ErrBadKwarg is returned when Input.Kwargs names a variable that Render
	// sets itself (messages, tools, documents, add_generation_prompt) or
	// holds a value that has no template equivalent.
	ErrBadKwarg = errors.New("chat: bad template kwarg")
	// ErrConfig is wrapped by errors about tokenizer_config.json and chat
	// request files.
	ErrConfig = errors.New("chat: bad config")
)

// TemplateError is returned by Render when the template calls
// raise_exception(message), as transformers raises
// jinja2.exceptions.TemplateError(message).
type TemplateError struct {
	Message string
}

func (e *TemplateError) Error() string { return "chat: template raised: " + e.Message }

// ParseError is returned by Parse for a template that does not parse.
// Line and Column are 1-based positions in the template source when the
// template engine reports one (0 otherwise).
type ParseError struct {
	Line, Column int
	Msg          string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("chat: template syntax error at line %d column %d: %s", e.Line, e.Column, e.Msg)
	}
	return "chat: template syntax error: " + e.Msg
}
