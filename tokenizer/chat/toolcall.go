package chat

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// Format is the way a model writes tool calls in its output.
type Format int

const (
	// FormatNone: the template has no tool calls; output is all content.
	FormatNone Format = iota
	// FormatQwen: Hermes style, used by Qwen2.5 and Qwen3:
	//	<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
	// one block per call, text around the blocks is content.
	FormatQwen
	// FormatLlama3: Llama 3.1/3.2 JSON calls, the whole output (after
	// optional text and <|python_tag|>) being
	//	{"name": "f", "parameters": {...}}
	// several calls separated by ';' or whitespace.
	FormatLlama3
	// FormatMistral: [TOOL_CALLS][{"name": "f", "arguments": {...}, "id": "..."}, ...]
	// after optional content.
	FormatMistral
)

func (f Format) String() string {
	switch f {
	case FormatNone:
		return "none"
	case FormatQwen:
		return "qwen"
	case FormatLlama3:
		return "llama3"
	case FormatMistral:
		return "mistral"
	}
	return "Format(?)"
}

// DetectToolFormat picks the tool-call format from a chat template's text:
// <tool_call> → FormatQwen, [TOOL_CALLS] → FormatMistral, a Llama 3 header
// with a "parameters" call → FormatLlama3, else FormatNone.
func DetectToolFormat(template string) Format {
	switch {
	case strings.Contains(template, "<tool_call>"):
		return FormatQwen
	case strings.Contains(template, "[TOOL_CALLS]"):
		return FormatMistral
	case strings.Contains(template, "<|start_header_id|>") &&
		(strings.Contains(template, `"parameters": `) || strings.Contains(template, "<|python_tag|>")):
		return FormatLlama3
	}
	return FormatNone
}

// ParseToolCalls splits model output into content and tool calls. Arguments
// come back as compact JSON text (key order and number spelling as the model
// wrote them), OpenAI style; IDs are those the model wrote (Mistral), else
// empty. Text that does not parse as a call stays in content: this is never
// an error. When calls are found, the content loses the whitespace at its
// ends (the template's separators around the calls).
func ParseToolCalls(text string, format Format) (content string, calls []ToolCall) {
	switch format {
	case FormatQwen:
		return parseQwen(text)
	case FormatLlama3:
		return parseLlama3(text)
	case FormatMistral:
		return parseMistral(text)
	}
	return text, nil
}

const (
	qwenOpen    = "<tool_call>"
	qwenClose   = "</tool_call>"
	pythonTag   = "<|python_tag|>"
	mistralCall = "[TOOL_CALLS]"
)

func parseQwen(text string) (string, []ToolCall) {
	var content strings.Builder
	var calls []ToolCall
	rest := text
	for {
		i := strings.Index(rest, qwenOpen)
		if i < 0 {
			content.WriteString(rest)
			break
		}
		body := rest[i+len(qwenOpen):]
		after := ""
		if j := strings.Index(body, qwenClose); j >= 0 {
			body, after = body[:j], body[j+len(qwenClose):]
		}
		if call, ok := parseCall([]byte(body), false); ok {
			content.WriteString(rest[:i])
			calls = append(calls, call)
		} else {
			content.WriteString(rest[:len(rest)-len(after)])
		}
		rest = after
		if rest == "" {
			break
		}
	}
	if calls == nil {
		return text, nil
	}
	return strings.TrimSpace(content.String()), calls
}

func parseLlama3(text string) (string, []ToolCall) {
	content, body := "", text
	if i := strings.Index(text, pythonTag); i >= 0 {
		content, body = text[:i], text[i+len(pythonTag):]
	} else if !strings.HasPrefix(strings.TrimSpace(text), "{") {
		return text, nil
	}
	body = strings.TrimSpace(body)
	for _, end := range []string{"<|eom_id|>", "<|eot_id|>"} {
		body = strings.TrimSpace(strings.TrimSuffix(body, end))
	}
	var calls []ToolCall
	dec := json.NewDecoder(strings.NewReader(body))
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == io.EOF {
			break
		}
		if err != nil {
			return text, nil
		}
		call, ok := parseCall(raw, true)
		if !ok {
			return text, nil
		}
		calls = append(calls, call)
		// Skip the separators between calls.
		rest := body[dec.InputOffset():]
		trimmed := strings.TrimLeft(rest, " \t\r\n;")
		if trimmed == "" {
			break
		}
		dec = json.NewDecoder(strings.NewReader(trimmed))
		body = trimmed
	}
	if calls == nil {
		return text, nil
	}
	return strings.TrimSpace(content), calls
}

func parseMistral(text string) (string, []ToolCall) {
	i := strings.Index(text, mistralCall)
	if i < 0 {
		return text, nil
	}
	body := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(text[i+len(mistralCall):]), "</s>"))
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(body), &raws); err != nil || len(raws) == 0 {
		return text, nil
	}
	calls := make([]ToolCall, 0, len(raws))
	for _, raw := range raws {
		call, ok := parseCall(raw, false)
		if !ok {
			return text, nil
		}
		calls = append(calls, call)
	}
	return strings.TrimSpace(text[:i]), calls
}

// parseCall reads one {"name": ..., "arguments" | "parameters": {...},
// "id"?: ...} object. Arguments given as a string are taken as they are.
func parseCall(data []byte, preferParameters bool) (ToolCall, bool) {
	var w struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
		ID         *string         `json:"id"`
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return ToolCall{}, false
	}
	if err := json.Unmarshal(data, &w); err != nil || w.Name == nil || *w.Name == "" {
		return ToolCall{}, false
	}
	args := w.Arguments
	if preferParameters && w.Parameters != nil || args == nil {
		args = w.Parameters
	}
	call := ToolCall{Type: "function", Function: FunctionCall{Name: *w.Name, Arguments: "{}"}}
	if w.ID != nil {
		call.ID = *w.ID
	}
	args = bytes.TrimSpace(args)
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return ToolCall{}, false
		}
		call.Function.Arguments = buf.String()
	case args[0] == '"':
		if err := json.Unmarshal(args, &call.Function.Arguments); err != nil {
			return ToolCall{}, false
		}
	default:
		return ToolCall{}, false
	}
	return call, true
}

// CallSyntax is the text of one call in format f around its name and
// arguments: a call is prefix + name + mid + arguments (a JSON object) +
// suffix, which ParseToolCalls reads back as one call. FormatNone gets
// the Hermes (FormatQwen) syntax, the one a server's own tool prompt asks
// for. A forced call (sampler/grammar.ToolCallGrammar) is decoded in it.
func (f Format) CallSyntax() (prefix, mid, suffix string) {
	switch f {
	case FormatLlama3:
		return `{"name": "`, `", "parameters": `, `}`
	case FormatMistral:
		return mistralCall + `[{"name": "`, `", "arguments": `, `}]`
	}
	return qwenOpen + "\n{\"name\": \"", `", "arguments": `, "}\n" + qwenClose
}
