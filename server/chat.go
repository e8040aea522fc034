package server

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

type chatMessage struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	ToolCalls []chat.ToolCall `json:"tool_calls,omitempty"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type tokenLogprob struct {
	topLogprob
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      chatMessage   `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

// chatResponse is a chat completion; its Usage is always set.
type chatResponse = reply[chatChoice]

type chatDelta struct {
	Role      string               `json:"role,omitempty"`
	Content   *string              `json:"content,omitempty"`
	ToolCalls []chat.ToolCallDelta `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatChunk = reply[chunkChoice]

// chatPlan is a chat request mapped to the library's: the planning
// (tools, tool choice, response format, the prompt) is engine's
// (engine.LLM.StreamChat); the server keeps what only HTTP has.
type chatPlan struct {
	req         engine.ChatRequest
	params      sampler.Params
	n           int
	logprobs    bool
	topLogprobs int
}

// planChat maps a chat request to an engine.ChatRequest and its
// sampling parameters; the errors of the library's planning come back
// from the stream (engineError maps them).
func (s *Server) planChat(req *chatRequest, m *Model) (*chatPlan, *apiError) {
	if len(req.Messages) == 0 {
		return nil, badParam("messages", "messages must not be empty")
	}
	p, n, e := req.params()
	if e != nil {
		return nil, e
	}
	pl := &chatPlan{params: p, n: n, logprobs: req.Logprobs}
	if req.TopLogprobs != nil {
		if !req.Logprobs {
			return nil, badParam("top_logprobs", "top_logprobs needs logprobs: true")
		}
		if *req.TopLogprobs < 0 || *req.TopLogprobs > 20 {
			return nil, badParam("top_logprobs", "top_logprobs must be in [0, 20], got %d", *req.TopLogprobs)
		}
		pl.topLogprobs = *req.TopLogprobs
	}
	if req.Logprobs {
		pl.params.Logprobs = max(pl.topLogprobs, 1)
	}
	choice, e := req.toolChoice()
	if e != nil {
		return nil, e
	}
	pl.req = engine.ChatRequest{Messages: req.Messages, Tools: req.Tools, ToolChoice: choice,
		ResponseFormat: req.ResponseFormat.engine(), LiteralContent: s.cfg.LiteralContent}
	if req.LiteralContent != nil {
		pl.req.LiteralContent = *req.LiteralContent
	}
	if len(req.TemplateKwargs) > 0 {
		pl.req.Kwargs = map[string]any{}
		for k, v := range req.TemplateKwargs {
			pl.req.Kwargs[k] = v
		}
	}
	if err := pl.params.Validate(m.Gen.Tokenizer().VocabSize()); err != nil {
		return nil, engineError(err, "messages", s.cfg.Logf)
	}
	return pl, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req chatRequest
	if e := decodeBody(body, &req); e != nil {
		writeError(w, e)
		return
	}
	m, label, adapter, e := s.resolve(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	if s.cfg.LogPrompts {
		msgs, _ := json.Marshal(req.Messages)
		s.note(r, req.Model, msgs)
	} else {
		s.note(r, req.Model, nil)
	}
	pl, e := s.planChat(&req, m)
	if e != nil {
		writeError(w, e)
		return
	}
	stream := func(ctx context.Context) iter.Seq2[engine.Delta, error] {
		return m.Gen.StreamChat(ctx, pl.req, pl.params, engine.WithChoices(pl.n), engine.WithAdapter(adapter))
	}
	ctx := r.Context()
	run := s.startRun(ctx, []func(context.Context) iter.Seq2[engine.Delta, error]{stream}, pl.n)
	defer run.stop()
	first, ok := run.started(ctx, w, "messages")
	if !ok {
		return
	}
	mm := s.metrics.model(label)
	c := &chatOut{id: newID("chatcmpl-"), created: time.Now().Unix(), model: req.Model, plan: pl,
		tok: m.Gen.Tokenizer(), choices: make([]choiceState, pl.n)}
	if req.Stream {
		c.stream(ctx, w, run, first, mm, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	if err := run.collect(ctx, first, c.choices, mm); err != nil {
		if ctx.Err() == nil {
			writeError(w, engineError(err, "messages", s.cfg.Logf))
		}
		return
	}
	resp := chatResponse{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Usage: c.usage()}
	for i := range c.choices {
		ch := &c.choices[i]
		content, calls := string(ch.text), ch.calls
		cc := chatChoice{Index: i, Message: chatMessage{Role: "assistant", Content: &content, ToolCalls: calls}, FinishReason: ch.reason}
		if len(calls) > 0 && content == "" {
			cc.Message.Content = nil
		}
		if pl.logprobs {
			cc.Logprobs = &chatLogprobs{Content: c.logprobs(ch.logprobs)}
		}
		resp.Choices = append(resp.Choices, cc)
	}
	writeJSON(w, http.StatusOK, resp)
}

// chatOut builds the answer of one chat request.
type chatOut struct {
	id      string
	created int64
	model   string
	plan    *chatPlan
	tok     *tokenizer.Tokenizer
	choices []choiceState
}

func (c *chatOut) usage() *usage {
	u := &usage{}
	for i, ch := range c.choices {
		if i == 0 {
			u.PromptTokens = ch.usage.PromptTokens
			u.PromptTokensDetails = &tokenDetails{CachedTokens: ch.usage.CachedTokens}
		}
		u.CompletionTokens += ch.usage.CompletionTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// logprobs is the chat shape of token log-probabilities.
func (c *chatOut) logprobs(lps []engine.TokenLogprob) []tokenLogprob {
	out := make([]tokenLogprob, len(lps))
	for i, lp := range lps {
		out[i] = tokenLogprob{topLogprob: c.entry(lp.ID, lp.Logprob), TopLogprobs: []topLogprob{}}
		for _, t := range lp.Top[:min(len(lp.Top), c.plan.topLogprobs)] {
			out[i].TopLogprobs = append(out[i].TopLogprobs, c.entry(t.ID, t.Logprob))
		}
	}
	return out
}

func (c *chatOut) entry(id int32, lp float64) topLogprob {
	s, raw := tokenText(c.tok, id)
	b := make([]int, len(raw))
	for i, x := range raw {
		b[i] = int(x)
	}
	return topLogprob{Token: s, Logprob: lp, Bytes: b}
}

// stream sends the answer as chat.completion.chunk events.
func (c *chatOut) stream(ctx context.Context, w http.ResponseWriter, run *run, first []event, mm *modelMetrics, includeUsage bool) {
	out := newSSE(w, run.timeout)
	roleSent := make([]bool, len(c.choices))
	chunk := func(i int, d chatDelta, lp *chatLogprobs, reason *string) chatChunk {
		if !roleSent[i] {
			d.Role = "assistant"
			roleSent[i] = true
		}
		return chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chunkChoice{{Index: i, Delta: d, Logprobs: lp, FinishReason: reason}}}
	}
	tools := len(c.plan.req.Tools) > 0 && c.plan.req.ToolChoice != engine.ToolNone
	handle := func(ev event) error {
		ch := &c.choices[ev.i]
		ch.add(ev.d, time.Now(), mm, run.start)
		text := ev.d.TextDelta
		var lp *chatLogprobs
		if c.plan.logprobs && (!tools || len(ev.d.Logprobs) > 0) {
			lp = &chatLogprobs{Content: c.logprobs(ev.d.Logprobs)}
		}
		send := text != "" || len(ev.d.NewTokens) > 0 || !roleSent[ev.i]
		if tools { // text that may be a call is held back: a delta may say nothing
			send = text != "" || len(ev.d.ToolCalls) > 0 || lp != nil || !roleSent[ev.i]
		}
		if send {
			d := chatDelta{ToolCalls: ev.d.ToolCalls}
			if text != "" || len(ev.d.ToolCalls) == 0 {
				d.Content = &text
			}
			if err := out.send(chunk(ev.i, d, lp, nil)); err != nil {
				return err
			}
		}
		if ch.finished {
			reason := ch.reason
			return out.send(chunk(ev.i, chatDelta{}, nil, &reason))
		}
		return nil
	}
	if !run.pump(ctx, out, first, c.choices, "messages", handle) {
		return
	}
	if includeUsage {
		if out.send(chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chunkChoice{}, Usage: c.usage()}) != nil {
			return
		}
	}
	out.done()
}
