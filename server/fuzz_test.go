package server

import (
	"regexp"
	"testing"
)

// quoted matches the Go-quoted strings (%q) a message echoes.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// checkDecodeError: a refused body gets a 4xx in OpenAI's shape whose
// message names no Go type.
func checkDecodeError(t *testing.T, e *apiError) {
	t.Helper()
	if e.Status < 400 || e.Status >= 500 || e.Message == "" || e.Type == "" {
		t.Fatalf("error %+v: want a 4xx with a message and a type", e)
	}
	if goTypeNames.MatchString(quoted.ReplaceAllString(e.Message, `""`)) { // what the client sent may say anything
		t.Fatalf("the message names Go types: %q", e.Message)
	}
}

// FuzzDecodeChat: any body of POST /v1/chat/completions is decoded and
// validated (sampling fields, tools, messages) without a panic, into a
// request or a clean 4xx.
func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"n":2,"stop":["x"],"logit_bias":{"5":1}}`,
		`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}}}`,
		`{"model":"m","messages":[{"role":"user","content":42}],"response_format":"json","top_k":-1,"seed":-3}`,
		`{"messages":"x","stream":"yes","stream_options":{"include_usage":true},"max_tokens":1.5}`,
		`[1,2]`, `null`, ``, `{"model":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req chatRequest
		if e := decodeBody(body, &req); e != nil {
			checkDecodeError(t, e)
			return
		}
		if _, _, e := req.params(); e != nil {
			checkDecodeError(t, e)
		}
		if _, e := req.toolChoice(); e != nil {
			checkDecodeError(t, e)
		}
	})
}

// FuzzDecodeCompletion: likewise for POST /v1/completions, its prompt
// forms included.
func FuzzDecodeCompletion(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"hi","max_tokens":3}`,
		`{"model":"m","prompt":["a","b"],"n":2,"logprobs":3,"echo":false}`,
		`{"model":"m","prompt":[1,2,3]}`,
		`{"model":"m","prompt":[[1],[2,3]],"best_of":1,"suffix":null}`,
		`{"model":"m","prompt":{"a":1},"stop":7}`,
		`{"model":"m","prompt":[1,"a"]}`, `"x"`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req completionRequest
		if e := decodeBody(body, &req); e != nil {
			checkDecodeError(t, e)
			return
		}
		if _, e := parsePrompts(req.Prompt); e != nil {
			checkDecodeError(t, e)
		}
		if _, _, e := req.params(); e != nil {
			checkDecodeError(t, e)
		}
	})
}
