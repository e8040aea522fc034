package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one chat message in the OpenAI shape.
//
// Content is the text. A message whose content arrives as a list of parts
// (OpenAI {"type": "text", "text": ...} blocks) keeps them in Parts; the
// template then sees the text parts joined by "\n" as its content (parts of
// other types are dropped here; engine refuses them with a ContentError),
// as vLLM's "string" content format does.
type Message struct {
	Role    string        `json:"role"`
	Content string        `json:"-"`
	Parts   []ContentPart `json:"-"`
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the optional participant or tool name.
	Name string `json:"name,omitempty"`
	// ReasoningContent is the thinking of an assistant message. As in
	// transformers, the template sees it as both reasoning_content and
	// thinking.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// ContentPart is one block of a list-of-parts content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// ToolCall is a call an assistant message makes (OpenAI shape).
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type"` // "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as JSON text,
// as OpenAI does. A template sees the arguments as the JSON object they
// encode (key order and number spelling kept), or as the plain string when
// they are not a JSON object.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function the model may call (OpenAI shape). A template sees it as
// {"type", "function": {"name", "description", "parameters"}} in that order;
// Parameters is kept as the JSON text given, so tojson renders its keys in
// the order written.
type Tool struct {
	Type     string       `json:"type"` // "function"
	Function ToolFunction `json:"function"`
}

// ToolFunction is the schema of a callable function.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Strict is OpenAI's strict function calling: a forced call's
	// arguments follow Parameters with every object closed and its
	// properties in the schema's order (grammar.CompileStrictSchema).
	// Templates do not see it.
	Strict bool `json:"strict,omitempty"`
}

// Text is the content the template sees: Content, or the text parts joined
// by "\n" when the message has parts.
func (m *Message) Text() string {
	if m.Parts == nil {
		return m.Content
	}
	var texts []string
	for _, p := range m.Parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// messageJSON is Message's wire form; content is a string, null or parts.
type messageJSON struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
}

// UnmarshalJSON reads content given as a string, null or a list of parts.
func (m *Message) UnmarshalJSON(data []byte) error {
	var w messageJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = Message{Role: w.Role, ToolCalls: w.ToolCalls, ToolCallID: w.ToolCallID, Name: w.Name,
		ReasoningContent: w.ReasoningContent}
	c := bytes.TrimSpace(w.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		return json.Unmarshal(c, &m.Content)
	case c[0] == '[':
		m.Parts = []ContentPart{}
		return json.Unmarshal(c, &m.Parts)
	default:
		return fmt.Errorf("%w: message content must be a string, null or a list of parts", ErrConfig)
	}
	return nil
}

// MarshalJSON writes content as a string, or as parts when the message has
// them.
func (m Message) MarshalJSON() ([]byte, error) {
	w := messageJSON{Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name,
		ReasoningContent: m.ReasoningContent}
	var err error
	if m.Parts != nil {
		w.Content, err = json.Marshal(m.Parts)
	} else {
		w.Content, err = json.Marshal(m.Content)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(w)
}

// UnmarshalJSON accepts arguments as a JSON string (OpenAI) or as a JSON
// value, which is kept as its compact text.
func (f *FunctionCall) UnmarshalJSON(data []byte) error {
	var w struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	f.Name = w.Name
	f.Arguments = ""
	a := bytes.TrimSpace(w.Arguments)
	switch {
	case len(a) == 0 || string(a) == "null":
	case a[0] == '"':
		return json.Unmarshal(a, &f.Arguments)
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, a); err != nil {
			return err
		}
		f.Arguments = buf.String()
	}
	return nil
}
