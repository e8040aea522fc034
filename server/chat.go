package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
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

// hermesTools is the tool description the server adds as a system message
// when the model's template knows no tools (Qwen2.5's wording); the reply
// is then parsed in that format.
const hermesTools = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
	"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n%s</tools>\n\n" +
	"For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
	"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"

const mustCallTool = "You must call at least one of the functions above."

// chatPlan is a validated chat request ready to run.
type chatPlan struct {
	req         engine.ChatRequest
	params      sampler.Params
	n           int
	logprobs    bool
	topLogprobs int
	tools       toolMode
	format      chat.Format
	grammar     *sampler.ToolCallGrammar // tool_choice required or named: the forced call
	schema      *sampler.Schema          // response_format json_object or json_schema
	// constraintKey names the grammar or schema for the inference cache.
	constraintKey string
}

func (s *Server) planChat(req *chatRequest, m *Model) (*chatPlan, *apiError) {
	if e := req.checkMessages(); e != nil {
		return nil, e
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
	if pl.schema, e = req.ResponseFormat.schema(); e != nil {
		return nil, e
	}
	tools, mode, e := req.tools()
	if e != nil {
		return nil, e
	}
	if pl.schema != nil && mode == toolsRequired {
		return nil, badParam("response_format", "response_format %q with a forced tool call (tool_choice) is not supported", req.ResponseFormat.Type)
	}
	pl.tools = mode
	if pl.schema != nil {
		pl.constraintKey = req.ResponseFormat.key()
	}
	offered := tools
	msgs := req.Messages
	if mode != toolsOff {
		pl.format = m.ToolFormat
		var extra string
		if m.ToolFormat == chat.FormatNone {
			pl.format = chat.FormatQwen
			var b strings.Builder
			for _, t := range tools {
				js, _ := json.Marshal(t)
				b.Write(js)
				b.WriteByte('\n')
			}
			extra = fmt.Sprintf(hermesTools, b.String())
			tools = nil // the template would ignore them
		}
		if mode == toolsRequired {
			extra = strings.TrimSpace(extra + "\n\n" + mustCallTool)
			g, err := engine.ToolCallGrammar(pl.format, offered)
			var te *engine.ToolSchemaError
			if errors.As(err, &te) {
				i := slices.IndexFunc(req.Tools, func(t chat.Tool) bool { return t.Function.Name == te.Name })
				return nil, badParam(fmt.Sprintf("tools[%d].function.parameters", i), "%v", err)
			}
			if err != nil {
				return nil, badParam("tools", "%v", err)
			}
			pl.grammar = g
			js, _ := json.Marshal(offered)
			pl.constraintKey = fmt.Sprintf("tools:%v:%s", pl.format, js)
		}
		if extra != "" {
			msgs = withSystem(msgs, extra)
		}
	}
	pl.req = engine.ChatRequest{Messages: msgs, Tools: tools, RawToolCalls: true, LiteralContent: s.cfg.LiteralContent}
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

// withSystem appends text to the first system message, or puts a system
// message with text first.
func withSystem(msgs []chat.Message, text string) []chat.Message {
	out := append([]chat.Message(nil), msgs...)
	if len(out) > 0 && out[0].Role == "system" {
		out[0].Content = out[0].Text() + "\n\n" + text
		out[0].Parts = nil
		return out
	}
	return append([]chat.Message{{Role: "system", Content: text}}, out...)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req chatRequest
	if e := decodeBody(body, &req, s.messagesLimit()); e != nil {
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
	var constraints []sampler.Constraint // one per choice: a constraint has state
	for range pl.n {
		switch {
		case pl.grammar != nil:
			constraints = append(constraints, sampler.NewToolCallConstraint(pl.grammar, m.vocab(), pl.params.MaxTokens))
		case pl.schema != nil:
			constraints = append(constraints, sampler.NewSchemaConstraint(pl.schema, m.vocab(), pl.params.MaxTokens))
		}
	}
	stream := func(ctx context.Context) iter.Seq2[engine.Delta, error] {
		return m.Gen.StreamChat(ctx, pl.req, pl.params, engine.WithChoices(pl.n, constraints...), engine.WithAdapter(adapter),
			engine.WithConstraintKey(pl.constraintKey), s.cacheScope(r))
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
		content, calls, reason, e := c.finish(ch)
		if e != nil {
			writeError(w, e)
			return
		}
		cc := chatChoice{Index: i, Message: chatMessage{Role: "assistant", Content: &content, ToolCalls: calls}, FinishReason: reason}
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

// vocab is the model's vocabulary for the tool constraint, built at the
// first forced call.
func (m *Model) vocab() *sampler.Vocab {
	m.vocabOnce.Do(func() { m.vocabBytes = engine.ToolVocab(m.Gen.Tokenizer()) })
	return m.vocabBytes
}

// newCallParser is the parser of a reply's tool calls.
func (c *chatOut) newCallParser() *chat.ToolParser {
	return chat.NewToolParser(c.plan.format, func() string { return newID("call_") })
}

// finish is a finished choice's content, tool calls and finish reason.
func (c *chatOut) finish(ch *choiceState) (string, []chat.ToolCall, string, *apiError) {
	text := string(ch.text)
	if c.plan.tools == toolsOff {
		return text, nil, ch.reason, nil
	}
	p := c.newCallParser()
	content, _ := p.Add(text)
	rest, _, truncated := p.Finish()
	reason, e := c.reason(ch, p.Calls(), truncated)
	return content + rest, p.Calls(), reason, e
}

// validArgs reports whether a call's arguments are a JSON object.
func validArgs(args string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(args), &obj) == nil
}

// errNoToolCall answers a forced call the reply does not hold.
var errNoToolCall = newError(http.StatusInternalServerError, "server_error", "tool_call_failed",
	"tool_choice asked for a tool call, and the model's reply is not a valid call of an offered tool")

// errStopCutCall answers a forced call that a stop string of the request
// cut short: the request's fault.
var errStopCutCall = badParam("stop", "a stop string ended the reply before the forced tool call (tool_choice) was complete")

// reason is a choice's finish_reason: "tool_calls" when it made calls,
// else the engine's. A forced call (tool_choice required or named) that
// the reply lacks, or that names another tool or has no JSON object for
// arguments, is an error, unless max_tokens cut it ("length", as OpenAI).
func (c *chatOut) reason(ch *choiceState, calls []chat.ToolCall, truncated bool) (string, *apiError) {
	if ch.reason == "length" && (truncated || len(calls) == 0) {
		return "length", nil
	}
	if g := c.plan.grammar; g != nil {
		if (len(calls) == 0 || truncated) && ch.reason == "stop" && len(c.plan.params.Stop) > 0 {
			return "", errStopCutCall
		}
		if len(calls) == 0 || truncated {
			return "", errNoToolCall
		}
		for _, call := range calls {
			if !g.Has(call.Function.Name) || !validArgs(call.Function.Arguments) {
				return "", errNoToolCall
			}
		}
	}
	if len(calls) > 0 && !truncated {
		return "tool_calls", nil
	}
	return ch.reason, nil
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
	var parsers []*chat.ToolParser // tools offered: calls stream as they are written
	if c.plan.tools != toolsOff {
		parsers = make([]*chat.ToolParser, len(c.choices))
		for i := range parsers {
			parsers[i] = c.newCallParser()
		}
	}
	handle := func(ev event) error {
		ch := &c.choices[ev.i]
		ch.add(ev.d, time.Now(), mm, run.start)
		if parsers != nil {
			return c.sendCalls(out, parsers[ev.i], ev, !roleSent[ev.i], chunk)
		}
		text := ev.d.TextDelta
		var lp *chatLogprobs
		if c.plan.logprobs {
			lp = &chatLogprobs{Content: c.logprobs(ev.d.Logprobs)}
		}
		if text != "" || len(ev.d.NewTokens) > 0 || !roleSent[ev.i] {
			if err := out.send(chunk(ev.i, chatDelta{Content: &text}, lp, nil)); err != nil {
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

// sendCalls streams one event of a choice that was offered tools: content
// and tool-call deltas as the parser finds them, and at the end the
// finish reason (or, as an *apiError, the error of a forced call that
// failed).
func (c *chatOut) sendCalls(out *sse, p *chat.ToolParser, ev event, first bool,
	chunk func(int, chatDelta, *chatLogprobs, *string) chatChunk) error {
	ch := &c.choices[ev.i]
	content, deltas := p.Add(ev.d.TextDelta)
	truncated := false
	if ch.finished {
		rest, more, cut := p.Finish()
		content, deltas, truncated = content+rest, append(deltas, more...), cut
	}
	var lp *chatLogprobs
	if c.plan.logprobs && len(ev.d.Logprobs) > 0 {
		lp = &chatLogprobs{Content: c.logprobs(ev.d.Logprobs)}
	}
	if content != "" || len(deltas) > 0 || lp != nil || first {
		d := chatDelta{ToolCalls: deltas}
		if content != "" || len(deltas) == 0 {
			d.Content = &content
		}
		if err := out.send(chunk(ev.i, d, lp, nil)); err != nil {
			return err
		}
	}
	if !ch.finished {
		return nil
	}
	reason, e := c.reason(ch, p.Calls(), truncated)
	if e != nil {
		return e
	}
	return out.send(chunk(ev.i, chatDelta{}, nil, &reason))
}
