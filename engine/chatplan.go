package engine

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

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

// ToolFormat is how the model writes tool calls, read from its chat
// template: FormatNone when the template knows no tools (a Chat with
// tools then reads and forces calls in the Hermes format, FormatQwen).
func (l *LLM) ToolFormat() chat.Format { return l.toolFormat }

// ToolVocab is tok's vocabulary as a sampler.ToolCallConstraint reads it.
func ToolVocab(tok *tokenizer.Tokenizer) *sampler.Vocab {
	special := make([]bool, tok.VocabSize())
	for id := range special {
		special[id] = tok.IsSpecial(int32(id))
	}
	return sampler.NewVocab(tok.Pieces(), special, tok.EOS())
}

// ToolCallGrammar is the grammar of a forced call of one of tools in
// format f (FormatNone: the Hermes format). A tool's arguments follow its
// Parameters schema (none, or null: any object); a schema outside the
// supported subset (sampler.CompileSchema) is a *ToolSchemaError.
func ToolCallGrammar(f chat.Format, tools []chat.Tool) (*sampler.ToolCallGrammar, error) {
	names := make([]string, len(tools))
	args := make([]*sampler.Schema, len(tools))
	for i, t := range tools {
		names[i] = t.Function.Name
		if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 && string(p) != "null" {
			s, err := schemas.Compile(p)
			if err != nil {
				return nil, &ToolSchemaError{Name: t.Function.Name, Err: err}
			}
			if !s.AllowsObject() {
				return nil, &ToolSchemaError{Name: t.Function.Name, Err: &sampler.SchemaError{Feature: "type", Msg: "the arguments must be an object"}}
			}
			args[i] = s
		}
	}
	pre, mid, suf := f.CallSyntax()
	return sampler.NewToolCallGrammarArgs(pre, mid, suf, names, args)
}

// vocab is the model's ToolVocab, built at the first forced call.
func (l *LLM) vocab() *sampler.Vocab {
	l.vocabOnce.Do(func() { l.toolVocab = ToolVocab(l.tok) })
	return l.toolVocab
}

// offered is the tools a request offers the model: none with ToolNone,
// only the named one with a named function.
func offered(req ChatRequest) ([]chat.Tool, error) {
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

// chatTurn is a ChatRequest made ready to run.
type chatTurn struct {
	prompt  string
	literal []tokenizer.Range // of prompt, to tokenise as text (ChatRequest.LiteralContent)
	params  sampler.Params
	opts    []StreamOption     // the caller's, and the choices' constraints of a forced call
	parsers []*chat.ToolParser // one per choice; nil when no tools are offered
}

// prepareChat renders req and, when it offers tools, sets up the parser
// of each choice's reply and, for a forced call, each choice's grammar
// constraint (opts may ask for several choices: WithChoices).
func (l *LLM) prepareChat(req ChatRequest, params sampler.Params, opts []StreamOption) (chatTurn, error) {
	if err := l.checkBytes(chatBytes(req)); err != nil {
		return chatTurn{}, err
	}
	prompt, err := l.RenderChat(req)
	if err != nil {
		return chatTurn{}, err
	}
	t := chatTurn{prompt: prompt, params: params, opts: opts}
	if req.LiteralContent {
		if t.literal, err = l.literalRanges(prompt, systemForDeveloper(req.Messages)); err != nil {
			return chatTurn{}, err
		}
	}
	var r Request
	for _, o := range opts {
		o(&r)
	}
	n := max(r.N, 1)
	forced := req.ToolChoice != "" && req.ToolChoice != ToolAuto && req.ToolChoice != ToolNone
	if req.ResponseFormat != nil {
		s, err := ResponseSchema(*req.ResponseFormat)
		if err != nil {
			return chatTurn{}, err
		}
		if s != nil {
			switch {
			case forced:
				return chatTurn{}, fmt.Errorf("%w: %q with a forced tool call", ErrResponseFormat, req.ResponseFormat.Type)
			case params.Constraint != nil || r.Constraints != nil:
				return chatTurn{}, fmt.Errorf("%w: the response format sets the choices' Constraint; the request has one", ErrResponseFormat)
			}
			cs := make([]sampler.Constraint, n)
			for i := range cs {
				cs[i] = sampler.NewSchemaConstraint(s, l.vocab(), params.MaxTokens)
			}
			t.params.Constraint = nil
			if n == 1 {
				t.params.Constraint = cs[0]
			} else {
				t.opts = append(slices.Clone(opts), WithChoices(n, cs...))
			}
		}
	}
	tools, _ := offered(req) // RenderChat checked it
	if len(tools) == 0 {
		return t, nil
	}
	f := l.toolFormat
	if f == chat.FormatNone {
		f = chat.FormatQwen
	}
	if !req.RawToolCalls {
		for range n {
			t.parsers = append(t.parsers, chat.NewToolParser(f, nil))
		}
	}
	if req.ToolChoice == "" || req.ToolChoice == ToolAuto {
		return t, nil
	}
	if params.Constraint != nil || r.Constraints != nil {
		return chatTurn{}, fmt.Errorf("%w: a forced tool call (%q) sets the choices' Constraint; the request has one", ErrToolChoice, req.ToolChoice)
	}
	g, err := ToolCallGrammar(f, tools)
	if err != nil {
		return chatTurn{}, fmt.Errorf("%w: %w", ErrToolChoice, err)
	}
	if n == 1 {
		t.params.Constraint = sampler.NewToolCallConstraint(g, l.vocab(), params.MaxTokens)
		return t, nil
	}
	cs := make([]sampler.Constraint, n)
	for i := range cs {
		cs[i] = sampler.NewToolCallConstraint(g, l.vocab(), params.MaxTokens)
	}
	t.opts = append(slices.Clone(opts), WithChoices(n, cs...))
	return t, nil
}

// parse turns one delta's text into content and tool-call deltas with
// the parser of the delta's choice; at the end a reply that made its
// calls, the last one whole, finishes with "tool_calls" (a call that
// fills max_tokens exactly included).
func (t *chatTurn) parse(d *Delta) {
	if d.Index < 0 || d.Index >= len(t.parsers) {
		return
	}
	p := t.parsers[d.Index]
	content, calls := p.Add(d.TextDelta)
	if d.Finished {
		rest, more, truncated := p.Finish()
		content, calls = content+rest, append(calls, more...)
		if len(p.Calls()) > 0 && !truncated && (d.FinishReason == "stop" || d.FinishReason == "length") {
			d.FinishReason = "tool_calls"
		}
	}
	d.TextDelta, d.ToolCalls = content, calls
}
