package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestServeAnswers runs `vkllm serve` in-process on 127.0.0.1:0: it lists
// the model on /v1/models and answers a chat completion, logs the
// requests, and stops with status 0 when its context ends.
func TestServeAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, log, done := serveUntil(ctx, t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/models", "", `"id":"tiny"`},
		{"POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, `"completion_tokens":3`},
	} {
		if status, b := send(t, client, c.method, base+c.path, c.body); status != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s; want 200 with %s", c.method, c.path, status, b, c.want)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d:\n%s", code, log.String())
	}
	for _, want := range []string{"msg=\"model loaded\" model=tiny", "msg=request method=POST path=/v1/chat/completions status=200", "msg=stopped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}
