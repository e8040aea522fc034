package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// MaxN is the most choices one request may ask for (n).
const MaxN = 16

// MaxStop and MaxStopBytes bound a request's stop strings: how many, and
// the bytes of each (every delta is checked against each of them).
const (
	MaxStop      = 16
	MaxStopBytes = 1024
)

// samplingFields are the request fields shared by both endpoints.
type samplingFields struct {
	Model               string             `json:"model"`
	Stream              bool               `json:"stream"`
	StreamOptions       *streamOptions     `json:"stream_options"`
	N                   *int               `json:"n"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	Seed                *int64             `json:"seed"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	Stop                stopField          `json:"stop"`
	IgnoreEOS           bool               `json:"ignore_eos"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// stopField is "stop": null, a string or an array of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stopField{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return badParam("stop", "stop must be a string or an array of strings")
	}
	*s = many
	return nil
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	samplingFields
	Messages       []chat.Message             `json:"messages"`
	Tools          []chat.Tool                `json:"tools"`
	ToolChoice     json.RawMessage            `json:"tool_choice"`
	Logprobs       bool                       `json:"logprobs"`
	TopLogprobs    *int                       `json:"top_logprobs"`
	ResponseFormat *responseFormat            `json:"response_format"`
	TemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
	// LiteralContent overrides Config.LiteralContent for this request.
	LiteralContent *bool `json:"literal_content"`
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	samplingFields
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   *string         `json:"suffix"`
	BestOf   *int            `json:"best_of"`
	// ResponseFormat is the chat field's, for completions too (as vLLM).
	ResponseFormat *responseFormat `json:"response_format"`
}

// responseFormat is OpenAI's response_format: "text", "json_object", or
// "json_schema" with {"name", "schema", "strict"}. The schema is
// enforced whatever strict says (never less than asked); strict: true
// also closes its objects and orders their properties as OpenAI does
// (engine.ResponseFormat.Strict).
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

// engine is the format as the library takes it: nil when none is set.
// A json_schema without a schema maps to one without Schema, which the
// library refuses (engine.ErrResponseFormat).
func (rf *responseFormat) engine() *engine.ResponseFormat {
	if rf == nil {
		return nil
	}
	f := &engine.ResponseFormat{Type: rf.Type}
	if rf.Type == engine.FormatJSONSchema && rf.JSONSchema != nil {
		f.Schema = rf.JSONSchema.Schema
		f.Strict = rf.JSONSchema.Strict != nil && *rf.JSONSchema.Strict
	}
	return f
}

// readBody reads the body of a POST for its handler, after the api
// wrapper has checked its Content-Length against the limit: at most
// MaxBodyReads bodies are read at once (a request waits for its turn),
// and each must have arrived BodyTimeout after the request did. The read
// deadline is set around the read only and cleared after it, so it never
// cuts the stream that follows.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) (body []byte, e *apiError) {
	defer func() {
		if e != nil {
			dropBody(w)
		}
	}()
	if e := checkContentType(r.Header.Get("Content-Type")); e != nil {
		return nil, e
	}
	deadline := time.Now().Add(s.cfg.BodyTimeout)
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case s.bodySlots <- struct{}{}: // a free slot first, whatever else is ready
		defer func() { <-s.bodySlots }()
	default:
		select {
		case s.bodySlots <- struct{}{}:
			defer func() { <-s.bodySlots }()
		case <-wait.C:
			e := newError(http.StatusServiceUnavailable, "server_error", "server_busy", "too many request bodies are being read; retry shortly")
			e.RetryAfter = 1
			return nil, e
		case <-r.Context().Done():
			return nil, clientGone
		}
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(deadline) != nil {
		rc = nil // not a network connection (a test recorder)
	}
	data, err := readAll(r)
	if err == nil && rc != nil {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return nil, tooLarge(mbe.Limit)
		case errors.As(err, &ne) && ne.Timeout():
			return nil, newError(http.StatusRequestTimeout, "invalid_request_error", "request_timeout",
				"the request body did not arrive within %s", s.cfg.BodyTimeout)
		}
		return nil, newError(http.StatusBadRequest, "invalid_request_error", "invalid_body", "reading the body: %v", err)
	}
	return data, nil
}

// dropBody has the connection closed after the answer, without reading
// what is left of the request's body: net/http would otherwise read up to
// 256 KiB more of it, with no deadline, to reuse the connection.
func dropBody(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// checkContentType refuses any type but application/json, a missing one
// included.
func checkContentType(ct string) *apiError {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return newError(http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
			"Content-Type must be application/json, got %q", ct)
	}
	return nil
}

// readAll reads the whole body, into one buffer of its Content-Length
// when the client gave one (the api wrapper has refused a length above
// the limit), so a body costs its size and no more.
func readAll(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 {
		data := make([]byte, n)
		if _, err := io.ReadFull(r.Body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	return io.ReadAll(r.Body)
}

func tooLarge(limit int64) *apiError {
	return newError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
		"the request body is larger than %d bytes", limit)
}

// decodeBody decodes a request body, a JSON object, into v; its errors
// name JSON types and fields, never Go types. Keys are matched exactly,
// once each, and the arrays of limits bounded (see checkKeys).
func decodeBody(data []byte, v any, limits ...arrayLimit) *apiError {
	if len(bytes.TrimSpace(data)) == 0 {
		return newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "the request body is empty; send a JSON object")
	}
	if e := checkKeys(data, reflect.TypeOf(v), limits); e != nil {
		return e
	}
	if err := json.Unmarshal(data, v); err != nil {
		var ae *apiError
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &ae):
			return ae
		case errors.As(err, &te):
			field := strings.TrimPrefix(te.Field, "samplingFields.")
			if field == "" {
				return newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "the body must be a JSON object")
			}
			e := badParam(field, "%s: expected %s, got JSON %s", field, jsonKind(te.Type), te.Value)
			e.Code = strp("invalid_type")
			return e
		case errors.As(err, &se):
			return newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "malformed JSON at byte %d", se.Offset)
		}
		return newError(http.StatusBadRequest, "invalid_request_error", "invalid_json", "malformed request: %s", jsonMessage(err))
	}
	return nil
}

// jsonKind names the JSON a Go type decodes from: "an object", "a
// string", … (a client knows no Go type names).
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another type"
}

// goTypeName matches what encoding/json's messages say of Go types:
// "Go value of type chat.messageJSON", "struct { Type string }",
// "Go struct field chatRequest.messages of type …".
var goTypeName = regexp.MustCompile(`(Go (value|struct field) \S+( of type)?|of type) (struct \{[^}]*\}|[\w.\[\]*]+)`)

// jsonMessage is err's message with the Go type names taken out.
func jsonMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return goTypeName.ReplaceAllString(msg, "value")
}

// params turns the shared fields into sampler.Params and the choice count.
// Ranges are checked again by sampler.Params.Validate; the server checks
// what the sampler cannot see (n, max_tokens ≥ 1, logit_bias keys).
func (f *samplingFields) params() (sampler.Params, int, *apiError) {
	var p sampler.Params
	n := 1
	if f.N != nil {
		n = *f.N
		if n < 1 || n > MaxN {
			return p, 0, badParam("n", "n must be in [1, %d], got %d", MaxN, n)
		}
	}
	if f.MaxTokens != nil && f.MaxCompletionTokens != nil && *f.MaxTokens != *f.MaxCompletionTokens {
		return p, 0, badParam("max_tokens", "max_tokens and max_completion_tokens disagree; give one")
	}
	for name, v := range map[string]*int{"max_tokens": f.MaxTokens, "max_completion_tokens": f.MaxCompletionTokens} {
		if v != nil {
			if *v < 1 {
				return p, 0, badParam(name, "%s must be ≥ 1, got %d", name, *v)
			}
			p.MaxTokens = *v
		}
	}
	if f.StreamOptions != nil && !f.Stream {
		return p, 0, badParam("stream_options", "stream_options is only allowed when stream is true")
	}
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	p.Temperature = 1 // OpenAI's default
	setF(&p.Temperature, f.Temperature)
	setF(&p.TopP, f.TopP)
	if f.TopP != nil && *f.TopP == 0 {
		return p, 0, badParam("top_p", "top_p must be in (0, 1], got 0")
	}
	setF(&p.MinP, f.MinP)
	setF(&p.PresencePenalty, f.PresencePenalty)
	setF(&p.FrequencyPenalty, f.FrequencyPenalty)
	setF(&p.RepetitionPenalty, f.RepetitionPenalty)
	if f.RepetitionPenalty != nil && *f.RepetitionPenalty == 0 {
		return p, 0, badParam("repetition_penalty", "repetition_penalty must be in (0, 2], got 0")
	}
	if f.TopK != nil {
		if *f.TopK == -1 { // vLLM's "off"
			p.TopK = 0
		} else if *f.TopK < 1 {
			return p, 0, badParam("top_k", "top_k must be -1 (off) or ≥ 1, got %d", *f.TopK)
		} else {
			p.TopK = *f.TopK
		}
	}
	if f.Seed != nil {
		s := uint64(*f.Seed)
		p.Seed = &s
	}
	if len(f.LogitBias) > 0 {
		p.LogitBias = make(map[int32]float64, len(f.LogitBias))
		for k, v := range f.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil || id < 0 || strconv.FormatInt(id, 10) != k { // "+1" and "01" would alias "1"
				return p, 0, badParam("logit_bias", "logit_bias keys must be token ids in decimal, got %q", k)
			}
			if math.IsNaN(v) {
				return p, 0, badParam("logit_bias", "logit_bias[%s] is not a number", k)
			}
			p.LogitBias[int32(id)] = v
		}
	}
	if len(f.Stop) > MaxStop {
		return p, 0, badParam("stop", "at most %d stop strings, got %d", MaxStop, len(f.Stop))
	}
	for i, st := range f.Stop {
		if len(st) > MaxStopBytes {
			return p, 0, badParam("stop", "stop[%d] is %d bytes; at most %d", i, len(st), MaxStopBytes)
		}
	}
	p.Stop = f.Stop
	p.IgnoreEOS = f.IgnoreEOS
	return p, n, nil
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolChoice checks tools and tool_choice and maps tool_choice to
// engine.ChatRequest.ToolChoice: "auto", "none", "required" or the
// name of a function (the library checks it is one of the tools, and
// that the tools' names differ).
func (r *chatRequest) toolChoice() (string, *apiError) {
	for i, t := range r.Tools {
		if t.Type != "function" {
			return "", badParam(fmt.Sprintf("tools[%d].type", i), "tool type must be \"function\", got %q", t.Type)
		}
		if !toolName.MatchString(t.Function.Name) {
			return "", badParam(fmt.Sprintf("tools[%d].function.name", i), "tool names are 1-64 of a-z, A-Z, 0-9, _ and -; got %q", t.Function.Name)
		}
		if ps := t.Function.Parameters; len(ps) > 0 && string(ps) != "null" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(ps, &obj) != nil {
				return "", badParam(fmt.Sprintf("tools[%d].function.parameters", i), "parameters must be a JSON Schema object")
			}
		}
	}
	if len(r.ToolChoice) == 0 || string(r.ToolChoice) == "null" {
		return "", nil
	}
	var s string
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	switch {
	case json.Unmarshal(r.ToolChoice, &s) == nil:
		switch s {
		case engine.ToolNone, engine.ToolAuto, engine.ToolRequired:
			return s, nil
		}
		return "", badParam("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or a named function, got %q", s)
	case json.Unmarshal(r.ToolChoice, &named) == nil && named.Type == "function":
		switch name := named.Function.Name; name {
		case "":
			return "", badParam("tool_choice", "tool_choice names no function")
		case engine.ToolNone, engine.ToolAuto, engine.ToolRequired:
			return "", badParam("tool_choice", "a tool named %q cannot be forced by name (the name is a tool_choice of its own)", name)
		}
		return named.Function.Name, nil
	}
	return "", badParam("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":…}}")
}
