package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/sampler/grammar"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// strictSchema is a schema in OpenAI's strict style: every property
// required, no others.
const strictSchema = `{
 "type": "object",
 "properties": {
  "id": {"type": "string", "pattern": "^[a-z0-9_-]+$"},
  "age": {"type": "integer", "minimum": 18, "maximum": 99},
  "score": {"type": "number", "minimum": 0, "maximum": 1},
  "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
  "owner": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "admin": {"type": "boolean"}},
            "required": ["name", "admin"], "additionalProperties": false},
  "note": {"anyOf": [{"type": "string", "maxLength": 6}, {"type": "null"}]}
 },
 "required": ["id", "age", "score", "tags", "owner", "note"],
 "additionalProperties": false
}`

func schemaValidator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://s.json", doc); err != nil {
		t.Fatal(err)
	}
	v, err := c.Compile("mem://s.json")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func validJSON(v *jsonschema.Schema, text string) error {
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return v.Validate(inst)
}

// TestChatResponseFormat: the tiny model has random weights, so only the
// constraint makes its replies JSON: 50 seeded samples under a strict
// json_schema must all parse and validate (a JSON Schema validator, not
// ours), where the same requests without it give no valid document.
func TestChatResponseFormat(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	ctx := context.Background()
	msgs := []chat.Message{{Role: "user", Content: "Describe a user as JSON."}}
	v := schemaValidator(t, strictSchema)
	rf := &ResponseFormat{Type: FormatJSONSchema, Schema: []byte(strictSchema)}
	for seed := range uint64(50) {
		p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 150}
		res, err := l.Chat(ctx, ChatRequest{Messages: msgs, ResponseFormat: rf}, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := validJSON(v, res.Text); err != nil || res.FinishReason != "stop" {
			t.Fatalf("seed %d: %q (finish %s): %v", seed, res.Text, res.FinishReason, err)
		}
		if seed < 3 {
			t.Logf("seed %d: %s", seed, res.Text)
		}
	}
	for seed := range uint64(5) { // the control: without the format
		p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 150}
		res, err := l.Chat(ctx, ChatRequest{Messages: msgs}, p)
		if err != nil {
			t.Fatal(err)
		}
		if validJSON(v, res.Text) == nil {
			t.Fatalf("seed %d: the random model wrote a valid document on its own: %q", seed, res.Text)
		}
	}

	// Two choices, each with its own constraint.
	seed := uint64(7)
	n := 0
	for d, err := range l.StreamChat(ctx, ChatRequest{Messages: msgs, ResponseFormat: rf}, sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 150}, WithChoices(2)) {
		if err != nil {
			t.Fatal(err)
		}
		_ = d
		n++
	}
	if n == 0 {
		t.Fatal("no deltas")
	}

	// json_object: any object.
	res, err := l.Chat(ctx, ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: FormatJSONObject}}, sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 60})
	var obj map[string]any
	if err != nil || json.Unmarshal([]byte(res.Text), &obj) != nil {
		t.Fatalf("json_object: %q, %v", res.Text, err)
	}
}

func TestChatResponseFormatErrors(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	ctx := context.Background()
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	p := sampler.Params{MaxTokens: 4}
	for _, c := range []struct {
		name string
		req  ChatRequest
		also error
	}{
		{"unsupported keyword", ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: FormatJSONSchema, Schema: []byte(`{"type":"string","format":"date"}`)}}, grammar.ErrSchema},
		{"no schema", ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: FormatJSONSchema}}, nil},
		{"unknown type", ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: "yaml"}}, nil},
		{"forced tool call", ChatRequest{Messages: msgs, Tools: toolList("f"), ToolChoice: ToolRequired, ResponseFormat: &ResponseFormat{Type: FormatJSONObject}}, nil},
	} {
		_, err := l.Chat(ctx, c.req, p)
		if !errors.Is(err, ErrResponseFormat) || c.also != nil && !errors.Is(err, c.also) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	var se *grammar.SchemaError
	_, err := l.Chat(ctx, ChatRequest{Messages: msgs, ToolChoice: ToolRequired, Tools: []chat.Tool{{Type: "function",
		Function: chat.ToolFunction{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"not":{}}}}`)}}}}, p)
	var te *ToolSchemaError
	if !errors.As(err, &te) || te.Name != "f" || !errors.As(err, &se) || se.Feature != "not" || se.Pointer != "/properties/a" || !errors.Is(err, ErrToolChoice) {
		t.Errorf("tool schema: %v", err)
	}
}

// TestChatToolArgsSchema: a forced call's arguments follow its tool's
// parameters schema, on the random model.
func TestChatToolArgsSchema(t *testing.T) {
	l := openToolLLM(t, 2)
	defer l.Close()
	const params = `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","unit","days"],"additionalProperties":false}`
	v := schemaValidator(t, params)
	tools := []chat.Tool{{Type: "function", Function: chat.ToolFunction{Name: "get_weather", Parameters: json.RawMessage(params)}}}
	msgs := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	for seed := range uint64(10) {
		p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 120}
		res, err := l.Chat(context.Background(), ChatRequest{Messages: msgs, Tools: tools, ToolChoice: "get_weather"}, p)
		if err != nil {
			t.Fatal(err)
		}
		checkCall(t, "get_weather", res, "get_weather")
		if err := validJSON(v, res.ToolCalls[0].Function.Arguments); err != nil {
			t.Fatalf("seed %d: arguments %s: %v", seed, res.ToolCalls[0].Function.Arguments, err)
		}
	}
}
