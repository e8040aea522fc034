package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

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
