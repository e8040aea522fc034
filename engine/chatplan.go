package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/sampler/grammar"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// This file is where a ChatRequest is planned, for every caller (Chat,
// StreamChat, Session.SendChat, TokenizeChat, RenderChat and the HTTP
// server, which maps its JSON to a ChatRequest and the errors below to
// statuses): the messages are checked, the tools offered are picked by
// ToolChoice and described to the model (by its template, or in the
// Hermes format when its template knows none), the prompt is rendered,
// and each choice gets its constraint (a forced call's grammar or the
// response format's schema) and its tool-call parser.

// Tool choices of a ChatRequest; any other ToolChoice names a function.
const (
	ToolAuto     = "auto"     // the model may call the tools (also "")
	ToolNone     = "none"     // the tools are not offered, the reply is not parsed
	ToolRequired = "required" // the reply is a call of one of the tools
)

// ErrToolChoice is wrapped by the errors of a ChatRequest whose ToolChoice
// cannot apply: a function that is not one of its Tools, a forced call
// without tools, or with a sampler.Params.Constraint of the caller's.
var ErrToolChoice = errcode.New(errcode.BadParams, "engine: bad tool choice")

// ErrNoToolCall ends the stream of a forced tool call (ToolRequired or a
// named function) whose reply is not a whole call of an offered tool
// with a JSON object for arguments, though max_tokens did not cut it
// (a stop string did, say). The grammar makes it rare.
var ErrNoToolCall = errors.New("engine: the reply is not the forced tool call")

// ErrStopCutCall ends the stream of a forced tool call that one of the
// request's stop strings ended before the call was whole: the request's
// fault, not the model's (it also wraps ErrNoToolCall).
var ErrStopCutCall = fmt.Errorf("%w: a stop string ended the reply before the call was complete", ErrNoToolCall)

// ToolFormat is how the model writes tool calls, read from its chat
// template: FormatNone when the template knows no tools (a Chat with
// tools then describes them in the Hermes format, FormatQwen, and reads
// and forces calls in it).
func (l *LLM) ToolFormat() chat.Format { return l.toolFormat }

// hermesTools is the tool description a chat with tools gets as a system
// message when the model's template knows no tools (Qwen2.5's wording).
const hermesTools = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n%s</tools>\n\n" +
	"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

// mustCallTool is added to the system message of a forced call.
const mustCallTool = "You must call at least one of the functions above."

// roles are the message roles a chat accepts, as OpenAI's API:
// "developer" is its newer name for "system".
var roles = []string{"system", "developer", "user", "assistant", "tool"}

// ErrUnknownRole is wrapped by every *RoleError.
var ErrUnknownRole = errcode.New(errcode.BadParams, "engine: unknown message role")

// RoleError is a message whose role is not one of system, developer,
// user, assistant or tool.
type RoleError struct {
	Index int // in the messages
	Role  string
}

func (e *RoleError) Error() string {
	return fmt.Sprintf("engine: messages[%d]: unknown role %q; expected one of %s", e.Index, e.Role, strings.Join(roles, ", "))
}

func (e *RoleError) Unwrap() error { return ErrUnknownRole }

// ErrContentType is wrapped by every *ContentError.
var ErrContentType = errcode.New(errcode.BadParams, "engine: content part the model cannot read")

// ContentError is a content part of a type other than "text" (an
// image_url, input_audio or file part): the models read text only, and
// a part is refused rather than dropped from the prompt unseen.
type ContentError struct {
	Index int // in the messages
	Part  int // in the message's parts
	Type  string
}

func (e *ContentError) Error() string {
	return fmt.Sprintf("engine: messages[%d].content[%d]: parts of type %q are not supported; the model reads text parts only", e.Index, e.Part, e.Type)
}

func (e *ContentError) Unwrap() error { return ErrContentType }

// ErrDuplicateTool is wrapped by every *ToolNameError.
var ErrDuplicateTool = errcode.New(errcode.BadParams, "engine: tool name given twice")

// ToolNameError is a tool whose name an earlier one of the request's
// Tools has: a call names its function, so the names must differ.
type ToolNameError struct {
	Index int // in the tools: the second of the name
	Name  string
}

func (e *ToolNameError) Error() string {
	return fmt.Sprintf("engine: tools[%d]: the tool name %q is given twice", e.Index, e.Name)
}

func (e *ToolNameError) Unwrap() error { return ErrDuplicateTool }

// offered is the tools a request offers the model: none with ToolNone,
// only the named one with a named function. Tools' names must differ,
// offered or not.
func offered(req ChatRequest) ([]chat.Tool, error) {
	names := make(map[string]bool, len(req.Tools))
	for i, t := range req.Tools {
		if names[t.Function.Name] {
			return nil, &ToolNameError{Index: i, Name: t.Function.Name}
		}
		names[t.Function.Name] = true
	}
	switch req.ToolChoice {
	case "", ToolAuto:
		return req.Tools, nil
	case ToolNone:
		return nil, nil
	case ToolRequired:
		if len(req.Tools) == 0 {
			return nil, fmt.Errorf("%w: tool choice %q without tools", ErrToolChoice, req.ToolChoice)
		}
		return req.Tools, nil
	}
	i := slices.IndexFunc(req.Tools, func(t chat.Tool) bool { return t.Function.Name == req.ToolChoice })
	if i < 0 {
		return nil, fmt.Errorf("%w: function %q is not one of the tools", ErrToolChoice, req.ToolChoice)
	}
	return req.Tools[i : i+1], nil
}

// forced reports whether req forces a tool call.
func forced(req ChatRequest) bool {
	return req.ToolChoice != "" && req.ToolChoice != ToolAuto && req.ToolChoice != ToolNone
}

// chatPrompt is a conversation's prompt as the model sees it.
type chatPrompt struct {
	text    string
	literal []tokenizer.Range // of text, to tokenise as text (ChatRequest.LiteralContent)
	tools   []chat.Tool       // offered; none: the reply is not parsed
	format  chat.Format       // of the calls, when tools are offered
}

// prompt checks req's messages and tool choice and renders the prompt,
// the tools offered described to the model.
func (l *LLM) prompt(req ChatRequest, addGenerationPrompt bool) (chatPrompt, error) {
	if err := l.checkBytes(chatBytes(req)); err != nil {
		return chatPrompt{}, err
	}
	if len(req.Messages) == 0 {
		return chatPrompt{}, errcode.Wrap(errcode.EmptyPrompt, sampler.ErrEmptyPrompt)
	}
	for i, m := range req.Messages {
		if !slices.Contains(roles, m.Role) {
			return chatPrompt{}, &RoleError{Index: i, Role: m.Role}
		}
		for j, p := range m.Parts {
			if p.Type != "text" {
				return chatPrompt{}, &ContentError{Index: i, Part: j, Type: p.Type}
			}
		}
	}
	tools, err := offered(req)
	if err != nil {
		return chatPrompt{}, err
	}
	p := chatPrompt{tools: tools, format: l.toolFormat}
	msgs := systemForDeveloper(req.Messages)
	described := tools // by the template
	if len(tools) > 0 {
		var extra string
		if p.format == chat.FormatNone {
			p.format = chat.FormatQwen
			var b strings.Builder
			for _, t := range tools {
				js, _ := json.Marshal(t)
				b.Write(js)
				b.WriteByte('\n')
			}
			extra = fmt.Sprintf(hermesTools, b.String())
			described = nil // the template would ignore them
		}
		if forced(req) {
			extra = strings.TrimSpace(extra + "\n\n" + mustCallTool)
		}
		msgs = withSystem(msgs, extra)
	}
	cc := l.chat
	if cc == nil {
		cc = &chat.Config{}
	}
	tpl, err := chat.Parse(cc.TemplateFor(len(described) > 0))
	if err != nil {
		return chatPrompt{}, err
	}
	in := cc.Input(&chat.Request{Messages: msgs, Tools: described, AddGenerationPrompt: &addGenerationPrompt})
	for k, v := range req.Kwargs {
		in.Kwargs[k] = v
	}
	if p.text, err = tpl.Render(in); err != nil {
		return chatPrompt{}, err
	}
	if req.LiteralContent {
		if p.literal, err = l.literalRanges(p.text, systemForDeveloper(req.Messages)); err != nil {
			return chatPrompt{}, err
		}
	}
	return p, nil
}

// withSystem appends text to the first system message, or puts a system
// message with text first (msgs is not changed).
func withSystem(msgs []chat.Message, text string) []chat.Message {
	out := slices.Clone(msgs)
	if len(out) > 0 && out[0].Role == "system" {
		out[0].Content = out[0].Text() + "\n\n" + text
		out[0].Parts = nil
		return out
	}
	return append([]chat.Message{{Role: "system", Content: text}}, out...)
}

// systemForDeveloper returns msgs with "developer" messages as "system"
// (a copy when there are any; msgs is not changed).
func systemForDeveloper(msgs []chat.Message) []chat.Message {
	if !slices.ContainsFunc(msgs, func(m chat.Message) bool { return m.Role == "developer" }) {
		return msgs
	}
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].Role == "developer" {
			out[i].Role = "system"
		}
	}
	return out
}

// ToolSchemaError is a tool whose parameters schema cannot be enforced
// on a forced call; it wraps ErrToolChoice and the *grammar.SchemaError.
type ToolSchemaError struct {
	Index int    // in ChatRequest.Tools
	Name  string // the tool's function name
	Err   error
}

func (e *ToolSchemaError) Error() string {
	return fmt.Sprintf("engine: tool %q: parameters: %v", e.Name, e.Err)
}

func (e *ToolSchemaError) Unwrap() []error { return []error{ErrToolChoice, e.Err} }

// toolCallGrammar is the grammar of a forced call of one of req's
// offered tools in format f. A tool's arguments follow its Parameters
// schema (none, or null: any object).
func toolCallGrammar(f chat.Format, req ChatRequest, tools []chat.Tool) (*grammar.ToolCallGrammar, error) {
	names := make([]string, len(tools))
	args := make([]*grammar.Schema, len(tools))
	for i, t := range tools {
		names[i] = t.Function.Name
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && string(p) != "null" {
			bad := func(err error) error {
				at := slices.IndexFunc(req.Tools, func(u chat.Tool) bool { return u.Function.Name == t.Function.Name })
				return &ToolSchemaError{Index: at, Name: t.Function.Name, Err: err}
			}
			compile := schemas.Compile
			if t.Function.Strict {
				compile = schemas.CompileStrict
			}
			s, err := compile(p)
			if err != nil {
				return nil, bad(err)
			}
			if !s.AllowsObject() {
				return nil, bad(&grammar.SchemaError{Feature: "type", Msg: "the arguments must be an object"})
			}
			args[i] = s
		}
	}
	pre, mid, suf := f.CallSyntax()
	g, err := grammar.NewToolCallGrammarArgs(pre, mid, suf, names, args)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrToolChoice, err)
	}
	return g, nil
}

// vocab is the model's vocabulary as the constraints read it, built at
// the first constrained chat and kept for the LLM's life.
func (l *LLM) vocab() *grammar.Vocab {
	l.vocabOnce.Do(func() {
		special := make([]bool, l.tok.VocabSize())
		for id := range special {
			special[id] = l.tok.IsSpecial(int32(id))
		}
		l.toolVocab = grammar.NewVocab(l.tok.Pieces(), special, l.tok.EOS())
	})
	return l.toolVocab
}

// chatPlan is a ChatRequest made ready to run.
type chatPlan struct {
	chatPrompt
	params  sampler.Params
	opts    []StreamOption     // the caller's, and the choices' constraints
	parsers []*chat.ToolParser // one per choice; nil when no tools are offered
	grammar *grammar.ToolCallGrammar
}

// plan renders req and sets up each choice (opts may ask for several:
// WithChoices): its constraint, of a forced call or a response format,
// and its tool-call parser when tools are offered.
func (l *LLM) plan(req ChatRequest, params sampler.Params, opts []StreamOption) (*chatPlan, error) {
	p, err := l.prompt(req, true)
	if err != nil {
		return nil, err
	}
	if rf := req.ResponseFormat; rf != nil {
		if s, err := responseSchema(*rf); err != nil {
			return nil, err
		} else if s != nil && forced(req) {
			return nil, fmt.Errorf("%w: %q with a forced tool call", ErrResponseFormat, rf.Type)
		}
		opts = append(slices.Clone(opts), WithResponseFormat(*rf))
	}
	if params, opts, err = l.withFormat(params, opts); err != nil {
		return nil, err
	}
	t := &chatPlan{chatPrompt: p, params: params, opts: opts}
	r := options(opts)
	if len(p.tools) > 0 {
		for range max(r.N, 1) {
			t.parsers = append(t.parsers, chat.NewToolParser(p.format, nil))
		}
	}
	if !forced(req) {
		return t, nil
	}
	if params.Constraint != nil || r.Constraints != nil {
		return nil, fmt.Errorf("%w: a forced tool call (%q) sets the choices' Constraint; the request has one", ErrToolChoice, req.ToolChoice)
	}
	if t.grammar, err = toolCallGrammar(p.format, req, p.tools); err != nil {
		return nil, err
	}
	js, _ := json.Marshal(p.tools)
	t.params, t.opts = constrain(params, opts, func() sampler.Constraint {
		return grammar.NewToolCallConstraint(t.grammar, l.vocab(), params.MaxTokens)
	}, fmt.Sprintf("tools:%v:%s", p.format, js))
	return t, nil
}

// options is the Request that opts make.
func options(opts []StreamOption) *Request {
	var r Request
	for _, o := range opts {
		o(&r)
	}
	return &r
}

// withFormat gives each choice the constraint of opts' response format
// (WithResponseFormat), when it asks for JSON.
func (l *LLM) withFormat(params sampler.Params, opts []StreamOption) (sampler.Params, []StreamOption, error) {
	r := options(opts)
	if r.format == nil {
		return params, opts, nil
	}
	s, err := responseSchema(*r.format)
	if s == nil || err != nil {
		return params, opts, err
	}
	if params.Constraint != nil || r.Constraints != nil {
		return params, opts, fmt.Errorf("%w: the response format sets the choices' Constraint; the request has one", ErrResponseFormat)
	}
	if l.tok == nil {
		return params, opts, fmt.Errorf("%w: a response format needs the model's vocabulary", ErrNoTokenizer)
	}
	params, opts = constrain(params, opts, func() sampler.Constraint {
		return grammar.NewSchemaConstraint(s, l.vocab(), params.MaxTokens)
	}, r.format.key())
	return params, opts, nil
}

// constrain gives each choice of a request its own constraint from
// newC (a constraint has state) and names them for the inference cache
// by key, unless the caller named them (WithConstraintKey).
func constrain(params sampler.Params, opts []StreamOption, newC func() sampler.Constraint, key string) (sampler.Params, []StreamOption) {
	r := options(opts)
	opts = slices.Clone(opts)
	if r.constraintKey == "" {
		opts = append(opts, WithConstraintKey(key))
	}
	if n := max(r.N, 1); n > 1 {
		cs := make([]sampler.Constraint, n)
		for i := range cs {
			cs[i] = newC()
		}
		return params, append(opts, WithChoices(n, cs...))
	}
	params.Constraint = newC()
	return params, opts
}

// parse turns one delta's text into content and tool-call deltas with
// the parser of the delta's choice. At the end, a reply that made its
// calls, the last one whole, finishes with "tool_calls" (a call that
// fills max_tokens exactly included); a forced call that max_tokens did
// not cut and the reply lacks is ErrNoToolCall.
func (t *chatPlan) parse(d *Delta) error {
	if d.Index < 0 || d.Index >= len(t.parsers) {
		return nil
	}
	p := t.parsers[d.Index]
	content, calls := p.Add(d.TextDelta)
	if d.Finished {
		rest, more, truncated := p.Finish()
		content, calls = content+rest, append(calls, more...)
		made := p.Calls()
		switch {
		case d.FinishReason == "length" && (truncated || len(made) == 0):
		case t.grammar != nil && !t.validCalls(made, truncated) && d.FinishReason == "stop" && len(t.params.Stop) > 0:
			return ErrStopCutCall
		case t.grammar != nil && !t.validCalls(made, truncated):
			return fmt.Errorf("%w (finish reason %q)", ErrNoToolCall, d.FinishReason)
		case len(made) > 0 && !truncated && (d.FinishReason == "stop" || d.FinishReason == "length"):
			d.FinishReason = "tool_calls"
		}
	}
	d.TextDelta, d.ToolCalls = content, calls
	return nil
}

// validCalls reports whether a forced call's reply holds whole calls of
// the grammar's tools, each with a JSON object for arguments.
func (t *chatPlan) validCalls(calls []chat.ToolCall, truncated bool) bool {
	if len(calls) == 0 || truncated {
		return false
	}
	for _, c := range calls {
		var obj map[string]json.RawMessage
		if !t.grammar.Has(c.Function.Name) || json.Unmarshal([]byte(c.Function.Arguments), &obj) != nil {
			return false
		}
	}
	return true
}
