package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// TestChatResponseFormatStrict: Strict closes the schema's objects; the
// same request without it (answered first, so the inference cache holds
// it) writes other keys, and is not what the strict one gets back.
func TestChatResponseFormatStrict(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	const schema = `{"type":"object","properties":{"b":{"type":"boolean"},"a":{"type":"integer","minimum":0,"maximum":9}},"required":["b","a"]}`
	msgs := []chat.Message{{Role: "user", Content: "JSON please."}}
	others := 0
	for seed := range uint64(5) {
		p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 100}
		open, err := l.Chat(context.Background(), ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: FormatJSONSchema, Schema: []byte(schema)}}, p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if json.Unmarshal([]byte(open.Text), &m) == nil && len(m) > 2 {
			others++
		}
		strict, err := l.Chat(context.Background(), ChatRequest{Messages: msgs, ResponseFormat: &ResponseFormat{Type: FormatJSONSchema, Schema: []byte(schema), Strict: true}}, p)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(strings.NewReader(strict.Text))
		var keys []string
		dec.Token()
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		if len(keys) != 2 || keys[0] != "b" || keys[1] != "a" {
			t.Errorf("seed %d strict: %q: keys %q, want [b a]", seed, strict.Text, keys)
		}
	}
	if others == 0 {
		t.Error("the open schema's replies have no other keys: the test shows nothing")
	}
}
