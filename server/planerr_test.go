package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestPlannerErrors: the library's planner decides what a chat request
// may hold (its content parts' types, unique tool names); the server maps
// its errors to 400s naming the request's own field, for chat and for
// the Responses API (whose input items are not the planner's messages:
// instructions, function_call items and a previous response's
// conversation shift them), streaming or not.
func TestPlannerErrors(t *testing.T) {
	ts := newToolServer(t)
	_, _, b := ts.do("POST", "/v1/responses", "application/json", `{"model":"tiny","input":"hi","max_output_tokens":2}`)
	var prev struct{ ID string }
	if err := json.Unmarshal(b, &prev); err != nil || prev.ID == "" {
		t.Fatalf("a stored response: %s", b)
	}
	const twice = `the tool name "f" is given twice`
	const image = `content parts of type "input_image" are not supported; the model reads text (input_text)`
	for _, c := range []struct{ name, path, body, param, message string }{
		{"chat duplicate tools", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"a"}],"tools":[` +
			`{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[1].function.name", twice},
		{"chat duplicate tools, none offered", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"a"}],"tool_choice":"none","tools":[` +
			`{"type":"function","function":{"name":"g"}},{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[2].function.name", twice},
		{"responses duplicate tools", "/v1/responses", `{"model":"tiny","input":"a","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`,
			"tools[1].name", twice},
		{"responses image", "/v1/responses", `{"model":"tiny","instructions":"be brief","input":[{"role":"user","content":"hi"},` +
			`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
			`{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"http://x/y.png"}]}]}`,
			"input[2].content[1].type", image},
		{"responses image output", "/v1/responses", `{"model":"tiny","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},` +
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_image"}]}]}`, "input[1].output[0].type", image},
		{"responses image after a previous one", "/v1/responses", `{"model":"tiny","previous_response_id":"` + prev.ID + `",` +
			`"input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "input[0].content[0].type", image},
	} {
		for _, stream := range []bool{false, true} {
			body := c.body
			if stream {
				body = body[:len(body)-1] + `,"stream":true}`
			}
			code, _, b := ts.do("POST", c.path, "application/json", body)
			if code != http.StatusBadRequest {
				t.Errorf("%s (stream %v): %d %s, want 400", c.name, stream, code, b)
				continue
			}
			e := errorBody(t, b)
			if e["param"] != c.param || e["message"] != c.message || e["code"] != "invalid_value" {
				t.Errorf("%s (stream %v): %s, want param %s, message %q", c.name, stream, b, c.param, c.message)
			}
		}
	}
	ts.settle()
}
