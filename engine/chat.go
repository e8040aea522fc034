package engine

import (
	"context"
	"iter"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// The chat calls of the LLM; chatplan.go plans their requests.

// ChatRequest is a conversation for Chat.
type ChatRequest struct {
	Messages []chat.Message
	// Tools are the functions the model may call; the template describes
	// them (when it knows no tools, a system message describes them in
	// the Hermes format) and the reply's calls are parsed out of its
	// text, in the template's format (see LLM.ToolFormat).
	Tools []chat.Tool
	// ToolChoice is ToolAuto ("" too), ToolNone (no tools offered),
	// ToolRequired (the reply is one call of one of Tools) or the name of
	// one of Tools (the reply is one call of it, the only tool offered).
	// A forced call is decoded under a grammar.ToolCallConstraint, so
	// even a model that never calls tools writes a valid one: one of the
	// names, a JSON object for arguments that follows the tool's
	// Parameters schema (a *ToolSchemaError when it cannot be enforced).
	ToolChoice string
	// Kwargs are extra template variables (enable_thinking, date_string, …).
	Kwargs map[string]any
	// ResponseFormat, when set to JSON, makes the reply one JSON
	// document (see ResponseFormat); with tools offered under ToolAuto
	// the reply is then the document, never a call. A forced tool call
	// beside it is refused with ErrResponseFormat.
	ResponseFormat *ResponseFormat
	// LiteralContent tokenises the messages' text as plain text:
	// special-token text in it ("<|im_end|>") stays text instead of
	// becoming the control token. Off by default, as Hugging Face's
	// apply_chat_template and llama.cpp (which parse it), so a user's
	// message can then close its turn and open a system one.
	LiteralContent bool
}

// RenderChat is the prompt StreamChat runs for req: the conversation
// rendered with the model's chat template (ChatML when it has none),
// with the generation prompt, as apply_chat_template, the tools offered
// described to the model. An empty conversation is refused with
// sampler.ErrEmptyPrompt, a message of an unknown role with a
// *RoleError, a bad ToolChoice with ErrToolChoice; a "developer"
// message is rendered as "system".
func (l *LLM) RenderChat(req ChatRequest) (string, error) {
	p, err := l.prompt(req, true)
	return p.text, err
}

// Chat renders the conversation through the chat template and generates
// the reply. The rendered prompt is tokenized without adding special tokens
// (the template writes its own, as apply_chat_template(tokenize=True)).
// With tools offered, the reply's tool calls are in Result.ToolCalls
// (see ChatRequest.ToolChoice).
func (l *LLM) Chat(ctx context.Context, req ChatRequest, params sampler.Params) (Result, error) {
	if ctx == nil {
		return Result{}, ErrNilContext
	}
	var res Result
	for d, err := range l.StreamChat(ctx, req, params) {
		if err != nil {
			return Result{}, err
		}
		res.add(d)
	}
	return res, nil
}

// StreamChat is Stream for a conversation rendered through the chat
// template, as Chat. With tools offered, each Delta's TextDelta is
// content and its ToolCalls the pieces of the calls as they are written:
// a call's first piece carries its index, ID, type and name, the next
// ones fragments of its arguments (chat.ToolParser); the last Delta's
// FinishReason is "tool_calls" when the reply made calls. With
// WithChoices, each choice is parsed (and, for a forced call,
// constrained) on its own.
func (l *LLM) StreamChat(ctx context.Context, req ChatRequest, params sampler.Params, opts ...StreamOption) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		var t *chatPlan
		submit := func() ([]string, []*mailbox, error) {
			err := l.admit(1)
			if err == nil {
				t, err = l.plan(req, params, opts)
			}
			if err != nil {
				return nil, nil, err
			}
			return l.submitEncoded([]string{t.text}, t.params, false, t.literal, t.opts...)
		}
		for d, err := range l.stream(ctx, submit) {
			if err == nil {
				if err = t.parse(&d); err != nil {
					d = Delta{}
				}
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}
