package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"go.uber.org/goleak"
)

// TestBadInput sends malformed and hostile requests: each gets its status
// and an error body in OpenAI's shape; afterwards the server still answers,
// no KV cell is in use and no goroutine is left behind.
func TestBadInput(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ts := newTestServer(t, Config{APIKey: "k"})
	ts.waitLoaded()
	const (
		chatPath = "/v1/chat/completions"
		cmplPath = "/v1/completions"
		embPath  = "/v1/embeddings"
		ok       = `"model":"tiny","messages":[{"role":"user","content":"hi"}]`
		json     = "application/json"
	)
	big := `{"model":"tiny","messages":[{"role":"user","content":"` + strings.Repeat("a", 5<<20) + `"}]}`
	deepSchema := strings.Repeat(`{"type":"array","items":`, 40) + `{}` + strings.Repeat(`}`, 40)
	bigSchema := `{"enum":[` + strings.Repeat(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",`, 7000) + `"b"]}`
	rf := func(schema string) string {
		return `{` + ok + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":` + schema + `}}}`
	}
	hugeBias := `{` + ok + `,"logit_bias":{"1":1,"2":1,"3":1,"999999999":1}}`
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		param                           string // "" when the error names none
		noKey                           bool
	}{
		{"malformed json", "POST", chatPath, json, `{"model":`, 400, "", false},
		{"not an object", "POST", chatPath, json, `[1,2,3]`, 400, "", false},
		{"empty body", "POST", chatPath, json, ``, 400, "", false},
		{"trailing garbage", "POST", chatPath, json, `{` + ok + `} x`, 400, "", false},
		{"model wrong type", "POST", chatPath, json, `{"model":5,"messages":[]}`, 400, "model", false},
		{"missing model", "POST", chatPath, json, `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model", false},
		{"unknown model", "POST", chatPath, json, `{"model":"gpt-9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", false},
		{"unknown quant", "POST", chatPath, json, `{"model":"tiny:Q9_9","messages":[{"role":"user","content":"hi"}]}`, 404, "model", false},
		{"empty messages", "POST", chatPath, json, `{"model":"tiny","messages":[]}`, 400, "messages", false},
		{"messages missing", "POST", chatPath, json, `{"model":"tiny"}`, 400, "messages", false},
		{"messages wrong type", "POST", chatPath, json, `{"model":"tiny","messages":"hi"}`, 400, "messages", false},
		{"image to a text model", "POST", chatPath, json, `{"model":"tiny","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]}`, 400, "messages[0].content[1].type", false},
		{"image to tokenize", "POST", "/tokenize", json, `{"model":"tiny","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`, 400, "messages[0].content[0].type", false},
		{"unknown role", "POST", chatPath, json, `{"model":"tiny","messages":[{"role":"wizard","content":"hi"}]}`, 400, "messages[0].role", false},
		{"content wrong type", "POST", chatPath, json, `{"model":"tiny","messages":[{"role":"user","content":42}]}`, 400, "", false},
		{"n too big", "POST", chatPath, json, `{` + ok + `,"n":1000000}`, 400, "n", false},
		{"n zero", "POST", chatPath, json, `{` + ok + `,"n":0}`, 400, "n", false},
		{"n wrong type", "POST", chatPath, json, `{` + ok + `,"n":"two"}`, 400, "n", false},
		{"negative max_tokens", "POST", chatPath, json, `{` + ok + `,"max_tokens":-5}`, 400, "max_tokens", false},
		{"zero max_completion_tokens", "POST", chatPath, json, `{` + ok + `,"max_completion_tokens":0}`, 400, "max_completion_tokens", false},
		{"max_tokens float", "POST", chatPath, json, `{` + ok + `,"max_tokens":1.5}`, 400, "max_tokens", false},
		{"temperature 5", "POST", chatPath, json, `{` + ok + `,"temperature":5}`, 400, "temperature", false},
		{"temperature negative", "POST", chatPath, json, `{` + ok + `,"temperature":-0.1}`, 400, "temperature", false},
		{"top_p 0", "POST", chatPath, json, `{` + ok + `,"top_p":0}`, 400, "top_p", false},
		{"top_p 2", "POST", chatPath, json, `{` + ok + `,"top_p":2}`, 400, "top_p", false},
		{"top_k negative", "POST", chatPath, json, `{` + ok + `,"top_k":-7}`, 400, "top_k", false},
		{"min_p 3", "POST", chatPath, json, `{` + ok + `,"min_p":3}`, 400, "min_p", false},
		{"presence_penalty 9", "POST", chatPath, json, `{` + ok + `,"presence_penalty":9}`, 400, "presence_penalty", false},
		{"frequency_penalty -9", "POST", chatPath, json, `{` + ok + `,"frequency_penalty":-9}`, 400, "frequency_penalty", false},
		{"repetition_penalty 0", "POST", chatPath, json, `{` + ok + `,"repetition_penalty":0}`, 400, "repetition_penalty", false},
		{"bad stop type", "POST", chatPath, json, `{` + ok + `,"stop":7}`, 400, "stop", false},
		{"empty stop string", "POST", chatPath, json, `{` + ok + `,"stop":[""]}`, 400, "stop", false},
		{"too many stops", "POST", chatPath, json, `{` + ok + `,"stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, 400, "stop", false},
		{"logit_bias out of range", "POST", chatPath, json, `{` + ok + `,"logit_bias":{"5":500}}`, 400, "logit_bias", false},
		{"logit_bias bad key", "POST", chatPath, json, `{` + ok + `,"logit_bias":{"abc":1}}`, 400, "logit_bias", false},
		{"logit_bias token outside vocab", "POST", chatPath, json, hugeBias, 400, "logit_bias", false},
		{"top_logprobs without logprobs", "POST", chatPath, json, `{` + ok + `,"top_logprobs":3}`, 400, "top_logprobs", false},
		{"top_logprobs 50", "POST", chatPath, json, `{` + ok + `,"logprobs":true,"top_logprobs":50}`, 400, "top_logprobs", false},
		{"tools malformed", "POST", chatPath, json, `{` + ok + `,"tools":[{"type":"function","function":{"name":"bad name!"}}]}`, 400, "tools[0].function.name", false},
		{"tools wrong type", "POST", chatPath, json, `{` + ok + `,"tools":[{"type":"retrieval"}]}`, 400, "tools[0].type", false},
		{"tools not an array", "POST", chatPath, json, `{` + ok + `,"tools":{"a":1}}`, 400, "tools", false},
		{"tool parameters not an object", "POST", chatPath, json, `{` + ok + `,"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]}`, 400, "tools[0].function.parameters", false},
		{"tool_choice unknown", "POST", chatPath, json, `{` + ok + `,"tool_choice":"sometimes"}`, 400, "tool_choice", false},
		{"tool_choice required without tools", "POST", chatPath, json, `{` + ok + `,"tool_choice":"required"}`, 400, "tool_choice", false},
		{"stream_options without stream", "POST", chatPath, json, `{` + ok + `,"stream_options":{"include_usage":true}}`, 400, "stream_options", false},
		{"response_format json_schema", "POST", chatPath, json, `{` + ok + `,"response_format":{"type":"json_schema"}}`, 400, "response_format", false},
		{"response_format unknown type", "POST", chatPath, json, `{` + ok + `,"response_format":{"type":"yaml"}}`, 400, "response_format", false},
		{"response_format unsupported keyword", "POST", chatPath, json, rf(`{"type":"string","format":"email"}`), 400, "response_format", false},
		{"response_format not", "POST", chatPath, json, rf(`{"not":{"type":"null"}}`), 400, "response_format", false},
		{"response_format schema not a schema", "POST", chatPath, json, rf(`5`), 400, "response_format", false},
		{"response_format bad pattern", "POST", chatPath, json, rf(`{"type":"string","pattern":"(a|b"}`), 400, "response_format", false},
		{"response_format recursive ref", "POST", chatPath, json, rf(`{"$ref":"#"}`), 400, "response_format", false},
		{"response_format unsatisfiable", "POST", chatPath, json, rf(`{"type":"integer","minimum":3,"maximum":2}`), 400, "response_format", false},
		{"response_format schema too deep", "POST", chatPath, json, rf(deepSchema), 400, "response_format", false},
		{"response_format schema too big", "POST", chatPath, json, rf(bigSchema), 400, "response_format", false},
		{"response_format with forced tool call", "POST", chatPath, json, `{` + ok + `,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}],"response_format":{"type":"json_object"}}`, 400, "response_format", false},
		{"tool parameters unsupported on a forced call", "POST", chatPath, json, `{` + ok + `,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"if":{}}}}}}]}`, 400, "tools[0].function.parameters", false},
		{"tool parameters not an object schema", "POST", chatPath, json, `{` + ok + `,"tool_choice":{"type":"function","function":{"name":"g"}},"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"string"}}}]}`, 400, "tools[1].function.parameters", false},
		{"completion response_format unsupported", "POST", cmplPath, json, `{"model":"tiny","prompt":"a","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"array","uniqueItems":true}}}}`, 400, "response_format", false},
		{"stream wrong type", "POST", chatPath, json, `{` + ok + `,"stream":"yes"}`, 400, "stream", false},
		{"body too big", "POST", chatPath, json, big, 413, "", false},
		{"wrong content type", "POST", chatPath, "text/plain", `{` + ok + `}`, 415, "", false},
		{"form content type", "POST", chatPath, "application/x-www-form-urlencoded", `model=tiny`, 415, "", false},
		{"no api key", "POST", chatPath, json, `{` + ok + `}`, 401, "", true},
		{"GET on chat", "GET", chatPath, "", ``, 405, "", false},
		{"DELETE on models", "DELETE", "/v1/models", "", ``, 405, "", false},
		{"unknown path", "POST", "/v1/engines", json, `{}`, 404, "", false},
		{"completion without prompt", "POST", cmplPath, json, `{"model":"tiny"}`, 400, "prompt", false},
		{"completion empty prompt", "POST", cmplPath, json, `{"model":"tiny","prompt":""}`, 400, "prompt", false},
		{"completion prompt wrong type", "POST", cmplPath, json, `{"model":"tiny","prompt":{"a":1}}`, 400, "prompt", false},
		{"completion token outside vocab", "POST", cmplPath, json, `{"model":"tiny","prompt":[999999999]}`, 400, "prompt", false},
		{"completion negative token", "POST", cmplPath, json, `{"model":"tiny","prompt":[-1]}`, 400, "prompt", false},
		{"completion too many choices", "POST", cmplPath, json, `{"model":"tiny","prompt":["a","b","c","d","e"],"n":4}`, 400, "prompt", false},
		{"completion logprobs 99", "POST", cmplPath, json, `{"model":"tiny","prompt":"a","logprobs":99}`, 400, "logprobs", false},
		{"completion echo with logprobs", "POST", cmplPath, json, `{"model":"tiny","prompt":"a","echo":true,"logprobs":1}`, 400, "echo", false},
		{"completion prompt too long", "POST", cmplPath, json, `{"model":"tiny","prompt":"` + strings.Repeat("word ", 1500) + `"}`, 400, "prompt", false},
		{"completion prompt too long streamed", "POST", cmplPath, json, `{"model":"tiny","stream":true,"prompt":"` + strings.Repeat("word ", 1500) + `"}`, 400, "prompt", false},
		{"chat temperature 5 streamed", "POST", chatPath, json, `{` + ok + `,"stream":true,"temperature":5}`, 400, "temperature", false},
		{"completion prompt mixed types", "POST", cmplPath, json, `{"model":"tiny","prompt":["a",1]}`, 400, "prompt", false},
		{"deeply nested", "POST", chatPath, json, `{"model":"tiny","messages":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, 400, "", false},
		{"embedding without input", "POST", embPath, json, `{"model":"tiny"}`, 400, "input", false},
		{"embedding empty string", "POST", embPath, json, `{"model":"tiny","input":""}`, 400, "input", false},
		{"embedding empty array", "POST", embPath, json, `{"model":"tiny","input":[]}`, 400, "input", false},
		{"embedding empty string in array", "POST", embPath, json, `{"model":"tiny","input":["a",""]}`, 400, "input", false},
		{"embedding empty id list", "POST", embPath, json, `{"model":"tiny","input":[[5],[]]}`, 400, "input", false},
		{"embedding input wrong type", "POST", embPath, json, `{"model":"tiny","input":{"a":1}}`, 400, "input", false},
		{"embedding input mixed types", "POST", embPath, json, `{"model":"tiny","input":["a",1]}`, 400, "input", false},
		{"embedding token outside vocab", "POST", embPath, json, `{"model":"tiny","input":[999999]}`, 400, "input", false},
		{"embedding negative token", "POST", embPath, json, `{"model":"tiny","input":[[5],[-1]]}`, 400, "input", false},
		{"embedding token beyond int32", "POST", embPath, json, `{"model":"tiny","input":[99999999999]}`, 400, "input", false},
		{"embedding fractional token", "POST", embPath, json, `{"model":"tiny","input":[1.5]}`, 400, "input", false},
		{"embedding too many inputs", "POST", embPath, json, `{"model":"tiny","input":[` + strings.Repeat(`"a",`, MaxEmbeddingInputs) + `"a"]}`, 400, "input", false},
		{"embedding too many id lists", "POST", embPath, json, `{"model":"tiny","input":[` + strings.Repeat(`[1],`, 500000) + `[1]]}`, 400, "input", false},
		{"embedding ids beyond the context", "POST", embPath, json, `{"model":"tiny","input":[` + strings.Repeat(`5,`, 1000000) + `5]}`, 400, "input", false},
		{"embedding text too long", "POST", embPath, json, `{"model":"tiny","input":"` + strings.Repeat("word ", 1500) + `"}`, 400, "input", false},
		{"embedding dimensions", "POST", embPath, json, `{"model":"tiny","input":"a","dimensions":32}`, 400, "dimensions", false},
		{"embedding dimensions zero", "POST", embPath, json, `{"model":"tiny","input":"a","dimensions":0}`, 400, "dimensions", false},
		{"embedding dimensions wrong type", "POST", embPath, json, `{"model":"tiny","input":"a","dimensions":"64"}`, 400, "dimensions", false},
		{"embedding encoding_format", "POST", embPath, json, `{"model":"tiny","input":"a","encoding_format":"int8"}`, 400, "encoding_format", false},
		{"embedding unknown model", "POST", embPath, json, `{"model":"gpt-9","input":"a"}`, 404, "model", false},
		{"GET on embeddings", "GET", embPath, "", ``, 405, "", false},
		{"tokenize without key", "POST", "/tokenize", json, `{"model":"tiny","prompt":"a"}`, 401, "", true},
		{"tokenize nothing", "POST", "/tokenize", json, `{"model":"tiny"}`, 400, "prompt", false},
		{"tokenize both", "POST", "/tokenize", json, `{"model":"tiny","prompt":"a","messages":[{"role":"user","content":"a"}]}`, 400, "messages", false},
		{"tokenize unknown model", "POST", "/tokenize", json, `{"model":"gpt-9","prompt":"a"}`, 404, "model", false},
		{"tokenize bad role", "POST", "/tokenize", json, `{"model":"tiny","messages":[{"role":"wizard","content":"a"}]}`, 400, "messages[0].role", false},
		{"tokenize empty messages", "POST", "/tokenize", json, `{"model":"tiny","messages":[]}`, 400, "messages", false},
		{"tokenize prompt too long", "POST", "/tokenize", json, `{"model":"tiny","prompt":"` + strings.Repeat("ab ", 400000) + `"}`, 400, "prompt", false},
		{"tokenize prompt wrong type", "POST", "/tokenize", json, `{"model":"tiny","prompt":[1,2]}`, 400, "prompt", false},
		{"tokenize generation prompt without messages", "POST", "/tokenize", json, `{"model":"tiny","prompt":"a","add_generation_prompt":true}`, 400, "add_generation_prompt", false},
		{"GET on tokenize", "GET", "/tokenize", "", ``, 405, "", false},
		{"detokenize no tokens", "POST", "/detokenize", json, `{"model":"tiny"}`, 400, "tokens", false},
		{"detokenize bad id", "POST", "/detokenize", json, `{"model":"tiny","tokens":[1,-5]}`, 400, "tokens", false},
		{"detokenize id past vocab", "POST", "/detokenize", json, `{"model":"tiny","tokens":[999999]}`, 400, "tokens", false},
		{"detokenize too many", "POST", "/detokenize", json, `{"model":"tiny","tokens":[` + strings.Repeat("1,", 5000) + `1]}`, 400, "tokens", false},
		{"detokenize strings", "POST", "/detokenize", json, `{"model":"tiny","tokens":["a"]}`, 400, "tokens", false},
		{"model by id unknown", "GET", "/v1/models/gpt-9", "", ``, 404, "model", false},
		{"model by id POST", "POST", "/v1/models/tiny", json, `{}`, 405, "", false},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := []string{"Authorization", "Bearer k"}
			if c.noKey {
				hdr = nil
			}
			code, _, b := ts.do(c.method, c.path, c.ctype, c.body, hdr...)
			if code != c.status {
				t.Fatalf("status %d, want %d: %s", code, c.status, b)
			}
			e := errorBody(t, b)
			if c.param != "" && e["param"] != c.param {
				t.Fatalf("param %v, want %q: %s", e["param"], c.param, b)
			}
		})
	}
	// The server still answers, and nothing is left in the engine.
	cl := ts.client(optionKey("k"))
	resp, err := cl.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny", Messages: user("still there?"), MaxTokens: openai.Int(3)})
	if err != nil || len(resp.Choices) != 1 {
		t.Fatalf("after the bad inputs: %v", err)
	}
	ts.settle()
	ts.close()
}
