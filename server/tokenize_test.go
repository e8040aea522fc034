package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/vkllm/vkllm/tokenizer"
)

// TestTokenizeRoundTrip: /tokenize gives the tokens the model runs (the
// prompt_tokens of a completion, the chat template's for messages) and
// max_model_len; /detokenize gives the text back.
func TestTokenizeRoundTrip(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	tok := ts.gen().Tokenizer()
	var got struct {
		Count       int     `json:"count"`
		MaxModelLen int     `json:"max_model_len"`
		Tokens      []int32 `json:"tokens"`
	}
	post := func(path, body string, v any) {
		t.Helper()
		status, _, b := ts.do("POST", path, "application/json", body)
		if status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", path, body, status, b)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	text := "Hello wörld, tokens 123"
	post("/tokenize", fmt.Sprintf(`{"model":"tiny","prompt":%q}`, text), &got)
	want, err := tok.Encode(text, true)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Tokens) != fmt.Sprint(want) || got.Count != len(want) || got.MaxModelLen != 256 { // the tiny model's positions (ContextLen is 1024)
		t.Errorf("tokenize %+v, want %v and max_model_len 256", got, want)
	}
	var back struct {
		Prompt string `json:"prompt"`
	}
	post("/detokenize", fmt.Sprintf(`{"model":"tiny","tokens":%s}`, mustJSON(got.Tokens)), &back)
	if back.Prompt != text {
		t.Errorf("detokenize %q, want %q", back.Prompt, text)
	}

	// Messages: the count is the chat's prompt_tokens.
	msgs := `[{"role":"user","content":"How many tokens?"}]`
	post("/tokenize", `{"model":"tiny","messages":`+msgs+`}`, &got)
	var chat struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	post("/v1/chat/completions", `{"model":"tiny","max_tokens":1,"messages":`+msgs+`}`, &chat)
	if got.Count != chat.Usage.PromptTokens || got.Count == 0 {
		t.Errorf("tokenize messages: %d tokens, chat prompt_tokens %d", got.Count, chat.Usage.PromptTokens)
	}
	withPrompt := got.Count
	post("/tokenize", `{"model":"tiny","add_generation_prompt":false,"messages":`+msgs+`}`, &got)
	if got.Count >= withPrompt {
		t.Errorf("without the generation prompt: %d tokens, with: %d", got.Count, withPrompt)
	}
	post("/detokenize", fmt.Sprintf(`{"model":"tiny","tokens":%s}`, mustJSON(got.Tokens)), &back)
	if back.Prompt == "" {
		t.Error("detokenize of a chat: empty")
	}
}

// TestDetokenizeEmpty: /detokenize of [] is "", as vLLM's.
func TestDetokenizeEmpty(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	status, _, b := ts.do("POST", "/detokenize", "application/json", `{"model":"tiny","tokens":[]}`)
	if status != http.StatusOK || string(b) != `{"prompt":""}`+"\n" && string(b) != `{"prompt":""}` {
		t.Fatalf("detokenize []: %d %s, want 200 {\"prompt\":\"\"}", status, b)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestModelByID: GET /v1/models/{id} is the card of a loaded model with
// its context length; an unknown id is a 404.
func TestModelByID(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	status, _, b := ts.do("GET", "/v1/models/tiny", "", "")
	var card map[string]any
	if err := json.Unmarshal(b, &card); err != nil || status != 200 {
		t.Fatalf("%d %s", status, b)
	}
	if card["id"] != "tiny" || card["object"] != "model" || card["max_model_len"] != 256.0 || card["root"] != "tiny" {
		t.Errorf("card %v", card)
	}
	c := ts.client()
	m, err := c.Models.Get(t.Context(), "tiny")
	if err != nil || m.ID != "tiny" {
		t.Errorf("openai-go Models.Get: %+v, %v", m, err)
	}
	status, _, b = ts.do("GET", "/v1/models/nope", "", "")
	if status != http.StatusNotFound || errorBody(t, b)["code"] != "model_not_found" {
		t.Errorf("unknown model: %d %s", status, b)
	}
}

// TestTokenBytes: every token's bytes, joined, are the bytes the tokens
// decode to together, partial UTF-8 characters included.
func TestTokenBytes(t *testing.T) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"héllo wörld", "日本語のテキスト", "emoji 🙂🚀 done", "plain ascii"} {
		ids, err := tok.Encode(text, false)
		if err != nil {
			t.Fatal(err)
		}
		var joined []byte
		for _, id := range ids {
			_, b := tokenText(tok, id)
			joined = append(joined, b...)
		}
		if string(joined) != text {
			t.Errorf("%q: token bytes join to %q", text, joined)
		}
	}
}
