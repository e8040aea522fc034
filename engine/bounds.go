package engine

import (
	"fmt"
	"strings"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// A prompt is bounded before the work it costs: the queue is checked
// before it is rendered or tokenised, its bytes against what the
// context can hold (MaxLen tokens of at most tokenizer.MaxTokenBytes
// bytes each), tokenising stops once the context is exceeded, and at
// most encodeSlots prompts are tokenised at once. The memory of a
// request is thus proportional to the context, not to its text.

// ErrLiteralContent: literal content was asked for, and the chat
// template changed a message's text so that it cannot be found in the
// rendered prompt.
var ErrLiteralContent = fmt.Errorf("%w: the chat template changed a message's content; it cannot be tokenised as literal text", chat.ErrRender)

// admit refuses adds requests at once when the queue cannot take them,
// before their prompts cost anything; send checks again.
func (l *LLM) admit(adds int) error { return l.loop.admit(adds) }

// checkBytes refuses a text of n bytes that cannot fit the context
// whatever its tokens, and any text when the model has no tokenizer.
func (l *LLM) checkBytes(n int) error {
	if l.tok == nil {
		return fmt.Errorf("%w: it takes token ids only", ErrNoTokenizer)
	}
	if limit := l.maxLen * l.tok.MaxTokenBytes(); n > limit {
		return fmt.Errorf("%w: %d bytes are more than the context of %d tokens can hold (%d bytes)", ErrPromptTooLong, n, l.maxLen, limit)
	}
	return nil
}

// encode tokenises a prompt (lit: its literal ranges), refusing one
// longer than a request may hold without tokenising all of it.
func (l *LLM) encode(text string, addSpecial bool, lit []tokenizer.Range) ([]int32, error) {
	if err := l.checkBytes(len(text)); err != nil {
		return nil, err
	}
	l.encodeSlots <- struct{}{}
	ids, err := l.tok.EncodeWith(text, tokenizer.EncodeOptions{AddSpecial: addSpecial, Literal: lit, Limit: l.maxLen})
	<-l.encodeSlots
	if err != nil {
		return nil, err
	}
	if len(ids) > l.maxLen {
		return nil, fmt.Errorf("%w: more than %d tokens exceed the context of %d", ErrPromptTooLong, l.maxLen, l.maxLen)
	}
	return ids, nil
}

// chatBytes is the text a conversation brings to its prompt.
func chatBytes(req ChatRequest) int {
	n := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		n += len(m.Content) + len(m.ReasoningContent)
		for _, p := range m.Parts {
			n += len(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	return n
}

// literalRanges finds the messages' texts in the rendered prompt, in
// order, each after the one before: the ranges of those that hold
// special-token text are to be tokenised as literal text
// (ChatRequest.LiteralContent). A text with special-token text that
// cannot be found (the template changed it) is ErrLiteralContent.
func (l *LLM) literalRanges(prompt string, msgs []chat.Message) ([]tokenizer.Range, error) {
	var specials []string
	for _, a := range l.tok.AddedTokens() {
		if a.Special && a.Content != "" {
			specials = append(specials, a.Content)
		}
	}
	hasSpecial := func(s string) bool {
		for _, sp := range specials {
			if strings.Contains(s, sp) {
				return true
			}
		}
		return false
	}
	var out []tokenizer.Range
	at := 0
	find := func(text string) error {
		special := hasSpecial(text)
		for _, t := range []string{text, strings.TrimSpace(text)} {
			if i := strings.Index(prompt[at:], t); t != "" && i >= 0 {
				if special {
					out = append(out, tokenizer.Range{Start: at + i, End: at + i + len(t)})
				}
				at += i + len(t)
				return nil
			}
		}
		if special {
			return ErrLiteralContent
		}
		return nil
	}
	for i := range msgs {
		m := &msgs[i]
		texts := []string{m.Content}
		if m.Parts != nil {
			texts = texts[:0]
			for _, p := range m.Parts {
				texts = append(texts, p.Text)
			}
		}
		for _, t := range texts {
			if err := find(t); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// MaxPending is the most requests the LLM accepts at once
// (Options.MaxPending): a caller that needs more for one answer can
// never be served.
func (l *LLM) MaxPending() int { return l.opts.MaxPending }
