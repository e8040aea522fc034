package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records are the JSON log's "request" records of path.
func (s *syncBuffer) records(t *testing.T, path string) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "request" && rec["path"] == path {
			out = append(out, rec)
		}
	}
	return out
}

// TestRequestLog: one JSON record per request with its id (echoed from
// X-Request-Id, or made and sent back), key id, model, tokens, TTFT,
// duration, finish reason and status; never the key, and the prompt only
// with LogPrompts.
func TestRequestLog(t *testing.T) {
	for _, logPrompts := range []bool{false, true} {
		buf := &syncBuffer{}
		keys, err := NewKeys([]Key{{ID: "alice", Secret: "sk-secret-a"}})
		if err != nil {
			t.Fatal(err)
		}
		ts := newTestServer(t, Config{Keys: keys, LogPrompts: logPrompts, Logger: slog.New(slog.NewJSONHandler(buf, nil))})
		ts.waitLoaded()
		c := ts.client(option.WithAPIKey("sk-secret-a"))
		var resp *http.Response
		r, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny",
			Messages: user("a secret question"), MaxTokens: openai.Int(4), Temperature: openai.Float(1)},
			option.WithHeader("X-Request-Id", "req-abc-123"), option.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("X-Request-Id"); got != "req-abc-123" {
			t.Errorf("X-Request-Id %q not echoed", got)
		}
		if _, err := c.Completions.New(context.Background(), openai.CompletionNewParams{Model: "tiny",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("a secret completion")}, MaxTokens: openai.Int(2)}); err != nil {
			t.Fatal(err)
		}
		ts.close() // the record is written once the handler has returned
		recs := buf.records(t, "/v1/chat/completions")
		if len(recs) != 1 {
			t.Fatalf("%d records", len(recs))
		}
		rec := recs[0]
		want := map[string]any{"request_id": "req-abc-123", "key_id": "alice", "model": "tiny", "status": 200.0,
			"prompt_tokens": float64(r.Usage.PromptTokens), "completion_tokens": float64(r.Usage.CompletionTokens),
			"cached_tokens": 0.0, "finish_reason": string(r.Choices[0].FinishReason)} // unseeded: EOS may come first
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("%s = %v, want %v (record %v)", k, rec[k], v, rec)
			}
		}
		for _, k := range []string{"ttft", "duration"} {
			if d, _ := rec[k].(float64); d <= 0 {
				t.Errorf("%s = %v", k, rec[k])
			}
		}
		if rec["ttft"].(float64) > rec["duration"].(float64) {
			t.Errorf("ttft %v > duration %v", rec["ttft"], rec["duration"])
		}
		buf.mu.Lock()
		all := buf.b.String()
		buf.mu.Unlock()
		if strings.Contains(all, "sk-secret-a") {
			t.Error("the log holds the API key")
		}
		for _, prompt := range []string{"a secret question", "a secret completion"} {
			if got := strings.Contains(all, prompt); got != logPrompts {
				t.Errorf("%q in the log: %v, LogPrompts %v", prompt, got, logPrompts)
			}
		}
		if _, has := rec["prompt"]; has != logPrompts {
			t.Errorf("prompt attribute %v, LogPrompts %v", has, logPrompts)
		}
	}
}

// TestRequestID: a request without X-Request-Id, or with one too long,
// gets a new id in the answer's X-Request-Id.
func TestRequestID(t *testing.T) {
	ts := newTestServer(t, Config{})
	for _, sent := range []string{"", strings.Repeat("x", MaxRequestIDLen+1), "has space"} {
		var hdr []string
		if sent != "" {
			hdr = []string{"X-Request-Id", sent}
		}
		_, h, _ := ts.do("GET", "/health", "", "", hdr...)
		got := h.Get("X-Request-Id")
		if got == "" || got == sent || len(got) > MaxRequestIDLen {
			t.Errorf("sent %q, got %q", sent, got)
		}
	}
}
