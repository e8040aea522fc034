package chat

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// DefaultTemplate is the template of a model that ships none: ChatML, the
// default transformers used to fall back to.
const DefaultTemplate = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// MaxOutputBytes bounds a rendered prompt; a template that writes more fails
// with ErrOutputTooLarge.
const MaxOutputBytes = 64 << 20

// Input is what a template renders: transformers'
// apply_chat_template(messages, tools=..., add_generation_prompt=...,
// tokenize=False, **kwargs) with the tokenizer's special tokens.
type Input struct {
	Messages []Message
	// Tools are the functions offered; none (nil or empty) renders as
	// tools=None.
	Tools               []Tool
	AddGenerationPrompt bool
	// BOSToken and EOSToken are bos_token and eos_token; an empty one is
	// left undefined (as transformers leaves a token the tokenizer lacks).
	BOSToken, EOSToken string
	// Kwargs are further template variables (enable_thinking, date_string,
	// tools_in_user_message, ...). Values: nil, bool, string, integers,
	// floats, json.RawMessage (decoded with its key order), slices and
	// string-keyed maps of those (map keys sorted). They override BOSToken
	// and EOSToken.
	Kwargs map[string]any
}

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	source string
	tpl    *exec.Template
}

// templateConfig is transformers' Jinja environment: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, no autoescape.
func templateConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	c.KeepTrailingNewline = false
	c.AutoEscape = false
	return c
}

const rootName = "chat_template"

// sourceLoader serves the template source once, to the parser; include,
// import and extends find nothing (a chat template is a single file).
type sourceLoader struct {
	src  string
	read atomic.Bool
}

func (l *sourceLoader) Read(path string) (io.Reader, error) {
	if path != rootName || l.read.Swap(true) {
		return nil, fmt.Errorf("chat templates cannot load other templates (%q)", path)
	}
	return strings.NewReader(l.src), nil
}

func (l *sourceLoader) Resolve(path string) (string, error) { return path, nil }

func (l *sourceLoader) Inherit(string) (loaders.Loader, error) { return l, nil }

// Parse parses a chat template (Jinja source as found in
// tokenizer_config.json's chat_template). A syntax error is a *ParseError.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, &ParseError{Msg: fmt.Sprintf("template engine panic: %v", r)}
		}
	}()
	if len(src) > MaxTemplateBytes {
		return nil, &ParseError{Msg: fmt.Sprintf("template longer than %d bytes", MaxTemplateBytes)}
	}
	if err := checkNesting(src); err != nil {
		return nil, err
	}
	tpl, err := exec.NewTemplate(rootName, templateConfig(), &sourceLoader{src: src}, environment)
	if err != nil {
		var se *parser.SyntaxError
		if errors.As(err, &se) {
			return nil, &ParseError{Line: se.Line, Column: se.Column, Msg: se.Message}
		}
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return nil, &ParseError{Msg: err.Error()}
	}
	return &Template{source: src, tpl: tpl}, nil
}

// MustParse is Parse for templates known to be valid; it panics on error.
func MustParse(src string) *Template {
	t, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return t
}

// Source is the template text.
func (t *Template) Source() string { return t.source }

// reserved are the variables Render always sets.
var reserved = map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true}

// variables are the template's variables for in, as transformers passes
// them: messages, tools, documents (None), add_generation_prompt, the
// special tokens, then the kwargs.
func (in *Input) variables() (map[string]any, error) {
	msgs := make(pyList, len(in.Messages))
	for i := range in.Messages {
		m, err := messageValue(&in.Messages[i])
		if err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	var tools any
	if len(in.Tools) > 0 {
		list := make(pyList, len(in.Tools))
		for i := range in.Tools {
			tv, err := toolValue(&in.Tools[i])
			if err != nil {
				return nil, err
			}
			list[i] = tv
		}
		tools = list
	}
	vars := map[string]any{
		"messages":              msgs,
		"tools":                 tools,
		"documents":             nil,
		"add_generation_prompt": in.AddGenerationPrompt,
	}
	if in.BOSToken != "" {
		vars["bos_token"] = in.BOSToken
	}
	if in.EOSToken != "" {
		vars["eos_token"] = in.EOSToken
	}
	for k, v := range in.Kwargs {
		if reserved[k] {
			return nil, fmt.Errorf("%w: %q is set by Render", ErrBadKwarg, k)
		}
		tv, err := toValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadKwarg, k, err)
		}
		vars[k] = tv
	}
	return vars, nil
}

// renderState is one rendering's raise_exception record and macro depth.
type renderState struct {
	raised     *TemplateError
	macroDepth int
}

func (s *renderState) raiseException(_ *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	msg := pyStr(args.First())
	if s.raised == nil {
		s.raised = &TemplateError{Message: msg}
	}
	return nil, s.raised
}

// now is the clock of strftime_now (tests replace it).
var now = time.Now

func strftimeNow(_ *exec.Evaluator, args *exec.VarArgs) (*exec.Value, error) {
	if len(args.Args) != 1 || !args.Args[0].IsString() {
		return nil, errors.New("strftime_now expects one format string")
	}
	return exec.AsValue(strftime(now(), args.Args[0].String())), nil
}

// limitedWriter is a strings.Builder that refuses to grow past
// MaxOutputBytes.
type limitedWriter struct{ b strings.Builder }

func (w *limitedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > MaxOutputBytes {
		return 0, ErrOutputTooLarge
	}
	return w.b.Write(p)
}

func (w *limitedWriter) WriteString(s string) (int, error) {
	if w.b.Len()+len(s) > MaxOutputBytes {
		return 0, ErrOutputTooLarge
	}
	return w.b.WriteString(s)
}

// Render renders in. A raise_exception in the template is a *TemplateError
// carrying its message; other failures wrap ErrRender.
func (t *Template) Render(in Input) (out string, err error) {
	if len(in.Messages) == 0 {
		return "", ErrEmptyConversation
	}
	vars, err := in.variables()
	if err != nil {
		return "", err
	}
	state := &renderState{}
	vars["raise_exception"] = state.raiseException
	vars["strftime_now"] = strftimeNow
	vars[stateKey] = state
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: template engine panic: %v", ErrRender, r)
			if state.raised != nil {
				err = state.raised
			}
		}
	}()
	var w limitedWriter
	execErr := t.tpl.Execute(&w, exec.NewContext(vars))
	if state.raised != nil {
		return "", state.raised
	}
	if execErr != nil {
		if errors.Is(execErr, ErrOutputTooLarge) {
			return "", fmt.Errorf("%w: %w", ErrRender, ErrOutputTooLarge)
		}
		return "", fmt.Errorf("%w: %v", ErrRender, execErr)
	}
	return w.b.String(), nil
}
