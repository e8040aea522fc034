package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// POST /v1/responses, OpenAI's Responses API, mapped onto the chat
// request the library plans (engine.ChatRequest): the input (a string,
// or message, function_call and function_call_output items) and the
// instructions become messages, the function tools and tool_choice the
// request's, text.format its ResponseFormat. The reply's text and calls
// become output items (a message, function_call items), streamed as
// OpenAI's typed events with sequence numbers.
//
// previous_response_id continues a stored response: the server keeps the
// conversation of each response stored (store: true, the default) and
// sends it again with the new input, so the engine's prefix cache reuses
// its K/V. Stored responses are bounded per API key (MaxStoredResponses,
// MaxStoredBytes, StoredResponseTTL; the oldest go first) and found only
// with the key that made them: another key's id is "not found".

// Bounds of the stored responses, for each API key (every client is one
// key when the server has none).
const (
	MaxStoredResponses = 256              // the oldest goes first
	MaxStoredBytes     = 64 << 20         // conversation text held, counted in full for each response
	StoredResponseTTL  = 60 * time.Minute // after its creation
)

// responsesRequest is the body of POST /v1/responses.
type responsesRequest struct {
	Model              string            `json:"model"`
	Input              inputItems        `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []responseTool    `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Text               *responseText     `json:"text"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              *bool             `json:"store"`
	Stream             bool              `json:"stream"`
	Background         bool              `json:"background"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	Metadata           map[string]string `json:"metadata"`
	// Sampling, as on /v1/chat/completions (vLLM's extras too).
	Temperature       *float64  `json:"temperature"`
	TopP              *float64  `json:"top_p"`
	TopK              *int      `json:"top_k"`
	MinP              *float64  `json:"min_p"`
	Seed              *int64    `json:"seed"`
	PresencePenalty   *float64  `json:"presence_penalty"`
	FrequencyPenalty  *float64  `json:"frequency_penalty"`
	RepetitionPenalty *float64  `json:"repetition_penalty"`
	Stop              stopField `json:"stop"`
}

// inputItems is a request's input: a string (one user message) or an
// array of items. It is typed, not raw, so that the body's checks of
// keys reach into the items.
type inputItems []inputItem

func (in *inputItems) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*in = inputItems{{Role: "user", Content: slices.Clone(b)}}
		return nil
	}
	var its []inputItem
	if err := json.Unmarshal(b, &its); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return err
		}
		return badParam("input", "input must be a string or an array of items")
	}
	*in = its
	return nil
}

// responseTool is a tool of a Responses request: only "function" ones,
// flat ({"type", "name", "description", "parameters", "strict"}).
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// responseText is the request's "text": its format, flat
// ({"type": "json_schema", "name", "schema", "strict"}).
type responseText struct {
	Format *struct {
		Type   string          `json:"type"`
		Name   string          `json:"name,omitempty"`
		Schema json.RawMessage `json:"schema,omitempty"`
		Strict *bool           `json:"strict,omitempty"`
	} `json:"format"`
}

// inputItem is one item of an input array: a message (type "message" or
// none), a function_call the model made, or a function_call_output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responseObject is a response as OpenAI's API has it.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Error              *apiError         `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []responseItem    `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Text               json.RawMessage   `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []responseTool    `json:"tools"`
	Truncation         string            `json:"truncation"`
	Metadata           map[string]string `json:"metadata"`
	Usage              *responseUsage    `json:"usage"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseItem is an output item: a "message" (role assistant, its
// output_text parts) or a "function_call".
type responseItem struct {
	Type      string       `json:"type"`
	ID        string       `json:"id"`
	Status    string       `json:"status"`
	Role      string       `json:"role,omitempty"`
	Content   []outputText `json:"content,omitempty"`
	CallID    string       `json:"call_id,omitempty"`
	Name      string       `json:"name,omitempty"`
	Arguments *string      `json:"arguments,omitempty"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// MarshalJSON writes a message's content even when it has no part yet
// (OpenAI's output_item.added says "content": []).
func (it responseItem) MarshalJSON() ([]byte, error) {
	type plain responseItem
	if it.Type != "message" {
		return json.Marshal(plain(it))
	}
	content := it.Content
	if content == nil {
		content = []outputText{}
	}
	return json.Marshal(struct {
		plain
		Content []outputText `json:"content"`
	}{plain(it), content})
}

func newOutputText(s string) outputText {
	return outputText{Type: "output_text", Text: s, Annotations: []any{}, Logprobs: []any{}}
}

// clone is a copy of it that later changes to it do not reach.
func (it responseItem) clone() responseItem {
	it.Content = slices.Clone(it.Content)
	if it.Arguments != nil {
		a := *it.Arguments
		it.Arguments = &a
	}
	return it
}

// responseEvent is one event of a streamed response; Type says which
// fields it has.
type responseEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *responseObject `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           *responseItem   `json:"item,omitempty"`
	Part           *outputText     `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Name           string          `json:"name,omitempty"`
	Logprobs       *[]any          `json:"logprobs,omitempty"`
	// An "error" event's.
	Code    *string `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Param   *string `json:"param,omitempty"`
}

func ip(i int) *int { return &i }

// responsePlan is a Responses request mapped to the library's.
type responsePlan struct {
	chat  *chatPlan
	input []chat.Message // the conversation: the previous one's and the new input, without instructions
	at    []string       // of each message the planner sees, the input field of its content ("" for none)
	obj   responseObject // the answer's fields that the request sets
	store bool
}

// planResponse maps a Responses request to a chat request, through
// planChat (the same checks as /v1/chat/completions).
func (s *Server) planResponse(req *responsesRequest, m *Model, key string) (*responsePlan, *apiError) {
	if req.Background {
		return nil, badParam("background", "background responses are not supported")
	}
	msgs, where, e := responseInput(req.Input)
	if e != nil {
		return nil, e
	}
	pl := &responsePlan{store: req.Store == nil || *req.Store}
	if id := req.PreviousResponseID; id != nil {
		prev := s.responses.get(key, *id, time.Now())
		if prev == nil {
			e := newError(http.StatusNotFound, "invalid_request_error", "previous_response_not_found",
				"previous response with id %q not found", *id)
			e.Param = strp("previous_response_id")
			return nil, e
		}
		msgs = append(slices.Clip(prev.conv), msgs...)
	}
	pl.input = msgs
	cr := chatRequest{Messages: msgs, ToolChoice: req.ToolChoice}
	if req.Instructions != nil && *req.Instructions != "" {
		cr.Messages = append([]chat.Message{{Role: "system", Content: *req.Instructions}}, msgs...)
	}
	pl.at = append(make([]string, len(cr.Messages)-len(where)), where...)
	cr.samplingFields = samplingFields{Model: req.Model, MaxTokens: req.MaxOutputTokens, Temperature: req.Temperature,
		TopP: req.TopP, TopK: req.TopK, MinP: req.MinP, Seed: req.Seed, PresencePenalty: req.PresencePenalty,
		FrequencyPenalty: req.FrequencyPenalty, RepetitionPenalty: req.RepetitionPenalty, Stop: req.Stop}
	for i, t := range req.Tools {
		if t.Type != "function" {
			return nil, badParam(fmt.Sprintf("tools[%d].type", i), "only function tools are supported, got %q", t.Type)
		}
		ps := t.Parameters
		if string(bytes.TrimSpace(ps)) == "null" { // the official clients send "parameters": null for none
			ps = nil
		}
		cr.Tools = append(cr.Tools, chat.Tool{Type: t.Type, Function: chat.ToolFunction{Name: t.Name, Description: t.Description, Parameters: ps}})
	}
	if tc := bytes.TrimSpace(req.ToolChoice); len(tc) > 0 && tc[0] == '{' { // {"type": "function", "name": …}
		var named struct{ Type, Name string }
		if json.Unmarshal(tc, &named) != nil || named.Type != "function" {
			return nil, badParam("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"name\":…}")
		}
		cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": named.Name}})
	}
	if f := req.Text; f != nil && f.Format != nil {
		cr.ResponseFormat = &responseFormat{Type: f.Format.Type}
		if f.Format.Type == engine.FormatJSONSchema {
			cr.ResponseFormat.JSONSchema = &struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict *bool           `json:"strict"`
			}{Name: f.Format.Name, Schema: f.Format.Schema, Strict: f.Format.Strict}
		}
	}
	cp, e := s.planChat(&cr, m)
	if e != nil {
		if e.Param != nil { // name the field as this request has it
			p := strings.Replace(*e.Param, ".function.", ".", 1)
			p = strings.Replace(p, "max_tokens", "max_output_tokens", 1)
			p = strings.Replace(p, "messages", "input", 1)
			e.Param = &p
		}
		return nil, e
	}
	pl.chat = cp
	pl.obj = responseObject{Object: "response", Model: req.Model, Instructions: req.Instructions,
		MaxOutputTokens: req.MaxOutputTokens, ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls,
		PreviousResponseID: req.PreviousResponseID, Store: pl.store, Temperature: req.Temperature, TopP: req.TopP,
		ToolChoice: req.ToolChoice, Tools: req.Tools, Truncation: "disabled", Metadata: req.Metadata, Output: []responseItem{}}
	if len(bytes.TrimSpace(pl.obj.ToolChoice)) == 0 {
		pl.obj.ToolChoice = json.RawMessage(`"auto"`)
	}
	if pl.obj.Tools == nil {
		pl.obj.Tools = []responseTool{}
	}
	if pl.obj.Metadata == nil {
		pl.obj.Metadata = map[string]string{}
	}
	pl.obj.Text = json.RawMessage(`{"format":{"type":"text"}}`)
	if req.Text != nil && req.Text.Format != nil {
		pl.obj.Text, _ = json.Marshal(req.Text)
	}
	return pl, nil
}

// inputError names, in the planner's errors about a request's content
// parts and tools, the fields as this request has them (nil for any
// other error, or none).
func (pl *responsePlan) inputError(err error) *apiError {
	var ce *engine.ContentError
	var tne *engine.ToolNameError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Index < len(pl.at) && pl.at[ce.Index] != "":
		return badParam(fmt.Sprintf("%s[%d].type", pl.at[ce.Index], ce.Part), "content parts of type %q are not supported; the model reads text (input_text)", ce.Type)
	case errors.As(err, &tne):
		return toolNameError(tne, "tools[%d].name")
	}
	return nil
}

// responseInput is the messages of a request's input: a string is one
// user message; an array holds messages (text content only), the
// function_call items of an assistant turn (joined to the assistant
// message just before them, if any) and function_call_output items
// ("tool" messages).
func responseInput(items inputItems) (msgs []chat.Message, where []string, e *apiError) {
	if items == nil {
		return nil, nil, badParam("input", "input is required")
	}
	calls := false // the last message is an assistant turn that items may add calls to
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			m, e := inputContent(it.Content, at+".content", true)
			if e != nil {
				return nil, nil, e
			}
			m.Role = it.Role
			msgs, where = append(msgs, m), append(where, at+".content")
			calls = it.Role == "assistant"
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, nil, badParam(at, "a function_call item needs call_id and name")
			}
			if !calls {
				msgs, where = append(msgs, chat.Message{Role: "assistant"}), append(where, "")
				calls = true
			}
			last := &msgs[len(msgs)-1]
			last.ToolCalls = append(last.ToolCalls, chat.ToolCall{ID: it.CallID, Type: "function",
				Function: chat.FunctionCall{Name: it.Name, Arguments: it.Arguments}})
		case "function_call_output":
			if it.CallID == "" {
				return nil, nil, badParam(at+".call_id", "a function_call_output item needs call_id")
			}
			m, e := inputContent(it.Output, at+".output", false)
			if e != nil {
				return nil, nil, e
			}
			m.Role, m.ToolCallID = "tool", it.CallID
			msgs, where = append(msgs, m), append(where, at+".output")
			calls = false
		default:
			return nil, nil, badParam(at+".type", "input items of type %q are not supported; use message, function_call or function_call_output", it.Type)
		}
	}
	if len(msgs) == 0 {
		return nil, nil, badParam("input", "input must not be empty")
	}
	return msgs, where, nil
}

// inputContent is a message of the text of a message's content or a
// call's output: a string (Content), or parts (Parts) whose text types
// (input_text, output_text) are the library's "text"; the library's
// planner refuses a part of another type (an image, a file), and
// responsePlan.inputError names it as the request does.
func inputContent(raw json.RawMessage, param string, required bool) (chat.Message, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return chat.Message{}, badParam(param, "%s is required", param)
		}
		return chat.Message{}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return chat.Message{Content: s}, nil
	}
	var parts []chat.ContentPart
	if json.Unmarshal(raw, &parts) != nil {
		return chat.Message{}, badParam(param, "%s must be a string or an array of text parts", param)
	}
	for j, p := range parts {
		if p.Type == "input_text" || p.Type == "output_text" {
			parts[j].Type = "text"
		}
	}
	return chat.Message{Parts: parts}, nil
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request, body []byte) {
	var req responsesRequest
	if e := decodeBody(body, &req, arrayLimit{field: "input", max: s.cfg.MaxMessages, code: "too_many_messages"}); e != nil {
		writeError(w, e)
		return
	}
	m, label, adapter, e := s.resolve(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	if s.cfg.LogPrompts {
		in, _ := json.Marshal(req.Input)
		s.note(r, req.Model, in)
	} else {
		s.note(r, req.Model, nil)
	}
	key := infoOf(r.Context()).keyID
	pl, e := s.planResponse(&req, m, key)
	if e != nil {
		writeError(w, e)
		return
	}
	stream := func(ctx context.Context) iter.Seq2[engine.Delta, error] {
		return func(yield func(engine.Delta, error) bool) {
			for d, err := range m.Gen.StreamChat(ctx, pl.chat.req, pl.chat.params, engine.WithAdapter(adapter), s.cacheScope(r)) {
				if e := pl.inputError(err); e != nil {
					err = e
				}
				if !yield(d, err) {
					return
				}
			}
		}
	}
	ctx := r.Context()
	run := s.startRun(ctx, []func(context.Context) iter.Seq2[engine.Delta, error]{stream}, 1)
	defer run.stop()
	first, ok := run.started(ctx, w, "input")
	if !ok {
		return
	}
	mm := s.metrics.model(label)
	obj := pl.obj
	obj.ID, obj.CreatedAt, obj.Status = newID("resp_"), time.Now().Unix(), "in_progress"
	b := &outputBuilder{obj: &obj, open: -1, calls: map[int]int{}}
	cs := make([]choiceState, 1)
	handle := func(ev event) error {
		cs[ev.i].add(ev.d, time.Now(), mm, run.start)
		return b.add(ev.d)
	}
	if req.Stream {
		out := newSSE(w, run.timeout)
		b.emit = func(ev responseEvent) error {
			data, err := json.Marshal(ev)
			if err != nil {
				return err
			}
			return out.write(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", ev.Type, data))
		}
		snap := obj
		if b.send(responseEvent{Type: "response.created", Response: &snap}) != nil ||
			b.send(responseEvent{Type: "response.in_progress", Response: &snap}) != nil {
			return
		}
		if !run.pump(ctx, out, first, cs, "input", handle) {
			return
		}
	} else {
		for _, ev := range first {
			handle(ev)
		}
		for !allFinished(cs) {
			select {
			case ev := <-run.events:
				if ev.err != nil {
					if ctx.Err() == nil {
						writeError(w, engineError(ev.err, "input", s.cfg.Logf))
					}
					return
				}
				handle(ev)
			case <-ctx.Done():
				return
			case <-run.stopping:
				writeError(w, errShutdown)
				return
			}
		}
	}
	u := cs[0].usage
	obj.Usage = &responseUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	obj.Usage.InputTokensDetails.CachedTokens = u.CachedTokens
	if pl.store {
		obj.Store = s.responses.put(key, &obj, append(slices.Clip(pl.input), b.message()), time.Now())
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, obj)
		return
	}
	typ := "response.completed"
	if obj.Status == "incomplete" {
		typ = "response.incomplete"
	}
	b.send(responseEvent{Type: typ, Response: &obj})
}

// outputBuilder turns a reply's deltas into output items, in the order
// they are written, and, when streaming, into their events.
type outputBuilder struct {
	obj   *responseObject
	open  int         // the item being written; -1: none
	calls map[int]int // tool-call index → item index
	emit  func(responseEvent) error
	seq   int
}

// send emits ev with the next sequence number (nothing when not
// streaming).
func (b *outputBuilder) send(ev responseEvent) error {
	if b.emit == nil {
		return nil
	}
	ev.SequenceNumber = b.seq
	b.seq++
	return b.emit(ev)
}

func (b *outputBuilder) add(d engine.Delta) error {
	items := &b.obj.Output
	if d.TextDelta != "" {
		if b.open < 0 || (*items)[b.open].Type != "message" {
			if err := b.start(responseItem{Type: "message", ID: newID("msg_"), Role: "assistant", Content: []outputText{}}); err != nil {
				return err
			}
			part := newOutputText("")
			(*items)[b.open].Content = append((*items)[b.open].Content, part)
			if err := b.send(responseEvent{Type: "response.content_part.added", OutputIndex: ip(b.open), ItemID: (*items)[b.open].ID, ContentIndex: ip(0), Part: &part}); err != nil {
				return err
			}
		}
		it := &(*items)[b.open]
		it.Content[0].Text += d.TextDelta
		delta := d.TextDelta
		if err := b.send(responseEvent{Type: "response.output_text.delta", OutputIndex: ip(b.open), ItemID: it.ID, ContentIndex: ip(0), Delta: &delta, Logprobs: &[]any{}}); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		k, ok := b.calls[tc.Index]
		if !ok {
			empty := ""
			if err := b.start(responseItem{Type: "function_call", ID: newID("fc_"), CallID: tc.ID, Name: tc.Function.Name, Arguments: &empty}); err != nil {
				return err
			}
			k = b.open
			b.calls[tc.Index] = k
		}
		if a := tc.Function.Arguments; a != "" {
			it := &(*items)[k]
			*it.Arguments += a
			if err := b.send(responseEvent{Type: "response.function_call_arguments.delta", OutputIndex: ip(k), ItemID: it.ID, Delta: &a}); err != nil {
				return err
			}
		}
	}
	if !d.Finished {
		return nil
	}
	b.obj.Status = "completed"
	if d.FinishReason == "length" {
		b.obj.Status = "incomplete"
		b.obj.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
	}
	if len(*items) == 0 { // an empty reply is an empty message
		if err := b.start(responseItem{Type: "message", ID: newID("msg_"), Role: "assistant", Content: []outputText{newOutputText("")}}); err != nil {
			return err
		}
	}
	return b.finish()
}

// start opens item it, after finishing the one being written.
func (b *outputBuilder) start(it responseItem) error {
	if err := b.finish(); err != nil {
		return err
	}
	it.Status = "in_progress"
	b.obj.Output = append(b.obj.Output, it)
	b.open = len(b.obj.Output) - 1
	c := it.clone()
	return b.send(responseEvent{Type: "response.output_item.added", OutputIndex: ip(b.open), Item: &c})
}

// finish ends the item being written, if any: "incomplete" when
// max_output_tokens cut the reply.
func (b *outputBuilder) finish() error {
	if b.open < 0 {
		return nil
	}
	k := b.open
	b.open = -1
	it := &b.obj.Output[k]
	it.Status = "completed"
	if b.obj.Status == "incomplete" {
		it.Status = "incomplete"
	}
	switch it.Type {
	case "message":
		for j, p := range it.Content {
			text, part := p.Text, p
			if err := b.send(responseEvent{Type: "response.output_text.done", OutputIndex: ip(k), ItemID: it.ID, ContentIndex: ip(j), Text: &text, Logprobs: &[]any{}}); err != nil {
				return err
			}
			if err := b.send(responseEvent{Type: "response.content_part.done", OutputIndex: ip(k), ItemID: it.ID, ContentIndex: ip(j), Part: &part}); err != nil {
				return err
			}
		}
	case "function_call":
		a := *it.Arguments
		if err := b.send(responseEvent{Type: "response.function_call_arguments.done", OutputIndex: ip(k), ItemID: it.ID, Arguments: &a, Name: it.Name}); err != nil {
			return err
		}
	}
	c := it.clone()
	return b.send(responseEvent{Type: "response.output_item.done", OutputIndex: ip(k), Item: &c})
}

// message is the reply as the next turn's assistant message: its text
// and its calls.
func (b *outputBuilder) message() chat.Message {
	m := chat.Message{Role: "assistant"}
	for _, it := range b.obj.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				m.Content += p.Text
			}
		case "function_call":
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Type: "function",
				Function: chat.FunctionCall{Name: it.Name, Arguments: *it.Arguments}})
		}
	}
	return m
}

// responseStore holds the stored responses, bounded for each API key:
// at most max of them, of at most bytes in all (each counted with its
// whole conversation, so what they share is counted more than once), each
// for ttl. The oldest go first. The zero value uses the package's bounds.
type responseStore struct {
	mu    sync.Mutex
	max   int
	bytes int64
	ttl   time.Duration
	byID  map[string]*storedResponse
	byKey map[string]*keyStore
}

type storedResponse struct {
	key  string
	at   time.Time
	size int64
	conv []chat.Message // the conversation it ends, without instructions
	obj  responseObject
}

// keyStore is one key's stored responses, oldest first.
type keyStore struct {
	ids  []string
	size int64
}

func (st *responseStore) init() {
	if st.byID == nil {
		st.byID, st.byKey = map[string]*storedResponse{}, map[string]*keyStore{}
	}
	if st.max == 0 {
		st.max = MaxStoredResponses
	}
	if st.bytes == 0 {
		st.bytes = MaxStoredBytes
	}
	if st.ttl == 0 {
		st.ttl = StoredResponseTTL
	}
}

// put stores obj and the conversation it ends for key, and reports
// whether it did: a response larger than the key's whole budget is not
// stored.
func (st *responseStore) put(key string, obj *responseObject, conv []chat.Message, now time.Time) bool {
	js, _ := json.Marshal(conv)
	out, _ := json.Marshal(obj.Output)
	size := int64(len(js) + len(out) + 512)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.init()
	if size > st.bytes {
		return false
	}
	ks := st.byKey[key]
	if ks == nil {
		ks = &keyStore{}
		st.byKey[key] = ks
	}
	for len(ks.ids) > 0 {
		old := st.byID[ks.ids[0]]
		if len(ks.ids) < st.max && ks.size+size <= st.bytes && (old == nil || now.Sub(old.at) < st.ttl) {
			break
		}
		st.drop(ks, 0)
	}
	r := &storedResponse{key: key, at: now, size: size, conv: conv, obj: *obj}
	r.obj.Store = true
	st.byID[obj.ID] = r
	ks.ids = append(ks.ids, obj.ID)
	ks.size += size
	return true
}

// drop removes the i-th of ks's responses.
func (st *responseStore) drop(ks *keyStore, i int) {
	if r := st.byID[ks.ids[i]]; r != nil {
		ks.size -= r.size
		delete(st.byID, ks.ids[i])
	}
	ks.ids = slices.Delete(ks.ids, i, i+1)
}

// get is the response id stored for key, nil when there is none (an
// expired one, another key's).
func (st *responseStore) get(key, id string, now time.Time) *storedResponse {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.init()
	r := st.byID[id]
	if r == nil || r.key != key {
		return nil
	}
	if now.Sub(r.at) >= st.ttl {
		ks := st.byKey[key]
		st.drop(ks, slices.Index(ks.ids, id))
		return nil
	}
	return r
}

// remove deletes the response id stored for key, and reports whether
// there was one.
func (st *responseStore) remove(key, id string, now time.Time) bool {
	if st.get(key, id, now) == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ks := st.byKey[key]
	if i := slices.Index(ks.ids, id); i >= 0 {
		st.drop(ks, i)
		return true
	}
	return false
}

// handleResponseByID is GET (the stored response) and DELETE of
// /v1/responses/{id}.
func (s *Server) handleResponseByID(w http.ResponseWriter, r *http.Request) {
	method := http.MethodGet
	if r.Method == http.MethodDelete {
		method = http.MethodDelete
	}
	s.api(method, func(w http.ResponseWriter, r *http.Request) {
		id, key, now := r.PathValue("id"), infoOf(r.Context()).keyID, time.Now()
		notFound := newError(http.StatusNotFound, "invalid_request_error", "response_not_found", "response with id %q not found", id)
		if r.Method == http.MethodDelete {
			if !s.responses.remove(key, id, now) {
				writeError(w, notFound)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response", "deleted": true})
			return
		}
		st := s.responses.get(key, id, now)
		if st == nil {
			writeError(w, notFound)
			return
		}
		writeJSON(w, http.StatusOK, st.obj)
	})(w, r)
}
