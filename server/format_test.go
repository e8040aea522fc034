package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// userSchema is a strict structured-output schema: every property
// required, no others.
const userSchema = `{"type":"object","properties":{
 "id":{"type":"string","pattern":"^[a-z0-9_-]+$"},
 "age":{"type":"integer","minimum":18,"maximum":99},
 "tags":{"type":"array","items":{"enum":["red","green","blue"]},"minItems":1,"maxItems":3},
 "owner":{"type":"object","properties":{"name":{"type":"string","maxLength":8},"admin":{"type":"boolean"}},"required":["name","admin"],"additionalProperties":false}},
 "required":["id","age","tags","owner"],"additionalProperties":false}`

func jsonValidator(t *testing.T, schema string) func(string) error {
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
	return func(text string) error {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return err
		}
		return v.Validate(inst)
	}
}

// TestResponseFormat runs the tiny random model under response_format
// json_schema (strict), json_object and, on /v1/completions, json_schema:
// every reply, streamed or not, each of n choices, validates against the
// schema (a JSON Schema validator in the test). Random weights: only the
// constraint makes them valid.
func TestResponseFormat(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	validate := jsonValidator(t, userSchema)
	var schema map[string]any
	if err := json.Unmarshal([]byte(userSchema), &schema); err != nil {
		t.Fatal(err)
	}
	rf := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "user", Schema: schema, Strict: openai.Bool(true)}}}
	for seed := range int64(4) {
		p := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Describe a user."), ResponseFormat: rf,
			MaxTokens: openai.Int(120), Seed: openai.Int(seed), N: openai.Int(2)}
		resp, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range resp.Choices {
			if err := validate(ch.Message.Content); err != nil || ch.FinishReason != "stop" {
				t.Fatalf("seed %d choice %d: %q (finish %s): %v", seed, i, ch.Message.Content, ch.FinishReason, err)
			}
		}
		p.N = openai.Int(1)
		acc, _ := streamChat(t, c, p)
		if err := validate(acc.Choices[0].Message.Content); err != nil {
			t.Fatalf("seed %d streamed: %q: %v", seed, acc.Choices[0].Message.Content, err)
		}
	}
	// Without it, the same model writes no document.
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Describe a user."),
		MaxTokens: openai.Int(120), Seed: openai.Int(0)})
	if err != nil || validate(resp.Choices[0].Message.Content) == nil {
		t.Fatalf("without response_format: %v, %q", err, resp.Choices[0].Message.Content)
	}

	obj := openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	resp, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("JSON please."),
		ResponseFormat: obj, MaxTokens: openai.Int(60), Seed: openai.Int(3)})
	var m map[string]any
	if err != nil || json.Unmarshal([]byte(resp.Choices[0].Message.Content), &m) != nil {
		t.Fatalf("json_object: %v, %q", err, resp.Choices[0].Message.Content)
	}

	// /v1/completions takes the same field (openai-go has none there: set it raw).
	cr, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"A user:", "Another:"}},
		MaxTokens: openai.Int(120), Seed: openai.Int(1), N: openai.Int(2)},
		option.WithJSONSet("response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "user", "schema": schema}}))
	if err != nil || len(cr.Choices) != 4 {
		t.Fatalf("completions: %v, %+v", err, cr)
	}
	for _, ch := range cr.Choices {
		if err := validate(ch.Text); err != nil {
			t.Fatalf("completion choice %d: %q: %v", ch.Index, ch.Text, err)
		}
	}
	ts.settle()
}

// TestToolArgsFollowSchema: a forced call's arguments follow its tool's
// parameters schema, streamed or not.
func TestToolArgsFollowSchema(t *testing.T) {
	ts := newToolServer(t)
	c := ts.client()
	const params = `{"type":"object","properties":{"city":{"type":"string","maxLength":12},"unit":{"enum":["c","f"]},"days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","unit","days"],"additionalProperties":false}`
	validate := jsonValidator(t, params)
	var ps shared.FunctionParameters
	if err := json.Unmarshal([]byte(params), &ps); err != nil {
		t.Fatal(err)
	}
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather", Parameters: ps})
	for seed := range int64(4) {
		p := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Weather in Paris?"), Tools: []openai.ChatCompletionToolUnionParam{tool},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")},
			MaxTokens:  openai.Int(100), Seed: openai.Int(seed), N: openai.Int(2)}
		resp, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range resp.Choices {
			call := checkCall(t, fmt.Sprintf("seed %d choice %d", seed, i), ch, "get_weather")
			if err := validate(call.Function.Arguments); err != nil {
				t.Fatalf("seed %d choice %d: %s: %v", seed, i, call.Function.Arguments, err)
			}
		}
		p.N = openai.Int(1)
		acc, _ := streamChat(t, c, p)
		call := checkCall(t, fmt.Sprintf("seed %d streamed", seed), acc.Choices[0], "get_weather")
		if err := validate(call.Function.Arguments); err != nil {
			t.Fatalf("seed %d streamed: %s: %v", seed, call.Function.Arguments, err)
		}
	}
	ts.settle()
}

// TestResponseFormatErrors: a schema outside the subset is a 400 whose
// message names the keyword and where it is.
func TestResponseFormatErrors(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	const ok = `"model":"tiny","messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct{ body, param, want string }{
		{`{` + ok + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string","format":"email"}}}}}}`, "response_format", `#/properties/a: format`},
		{`{` + ok + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"not":{}}}}}`, "response_format", `not`},
		{`{` + ok + `,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","patternProperties":{"x":{}}}}}]}`, "tools[0].function.parameters", "patternProperties"},
		{`{` + ok + `,"tool_choice":{"type":"function","function":{"name":"other"}},"tools":[{"type":"function","function":{"name":"f"}}]}`, "tool_choice", "other"},
		{`{` + ok + `,"tool_choice":"required"}`, "tool_choice", "without tools"},
		{`{` + ok + `,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_object"}}`, "response_format", "forced tool call"},
		{`{` + ok + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "response_format", "without a schema"},
		{`{` + ok + `,"response_format":{"type":"yaml"}}`, "response_format", "yaml"},
	} {
		code, _, b := ts.do("POST", "/v1/chat/completions", "application/json", c.body)
		e := errorBody(t, b)
		if code != 400 || e["param"] != c.param || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
			t.Errorf("%s: %d %s", c.body, code, b)
		}
	}
}
