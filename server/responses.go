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
	"time"

	"github.com/vkllm/vkllm/engine"
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
