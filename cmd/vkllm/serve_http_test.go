package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestServeAnswers runs `vkllm serve` in-process on 127.0.0.1:0: it lists
// the model on /v1/models and answers a chat completion, logs the
// requests, and stops with status 0 when its context ends.
func TestServeAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuf
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--model", "tiny=" + tinyDir, "--addr", "127.0.0.1:0", "--backend", "cpu", "--ctx", "1024", "--max-seqs", "4"}, &log)
	}()
	addrRe := regexp.MustCompile(`serving on (http://[^\s"]+)`)
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addrRe.FindStringSubmatch(log.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address logged:\n%s", log.String())
		}
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/models", "", `"id":"tiny"`},
		{"POST", "/v1/chat/completions", `{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`, `"completion_tokens":3`},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s %s: %d %s; want 200 with %s", c.method, c.path, resp.StatusCode, b, c.want)
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
