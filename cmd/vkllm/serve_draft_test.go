package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/internal/testmodel"
)

// served is a `vkllm serve` running in-process on 127.0.0.1:0.
type served struct {
	t      *testing.T
	base   string // http://ADDR
	log    *syncBuf
	client *http.Client
	stop   func() int // cancels the serve and returns its exit status
}

// newServed runs `vkllm serve` with args on the tiny model and waits
// until it listens (its models may still be loading).
func newServed(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{t: t, log: &syncBuf{}}
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, append([]string{"--model", "tiny=" + tinyDir, "--addr", "127.0.0.1:0",
			"--backend", "cpu", "--ctx", "1024", "--max-seqs", "4"}, args...), s.log)
	}()
	tr := &http.Transport{}
	s.client = &http.Client{Transport: tr}
	stopped, code := false, 0
	s.stop = func() int {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
			tr.CloseIdleConnections()
		}
		return code
	}
	t.Cleanup(func() { s.stop() })
	addrRe := regexp.MustCompile(`listening on (http://[^\s"]+)`)
	for deadline := time.Now().Add(30 * time.Second); s.base == ""; time.Sleep(5 * time.Millisecond) {
		if m := addrRe.FindStringSubmatch(s.log.String()); m != nil {
			s.base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no address logged:\n%s", s.log.String())
		}
	}
	return s
}

// do sends a request, asking again while the model loads (503 saying
// "loading"), and returns the status and body.
func (s *served) do(method, path, body string) (int, []byte) {
	s.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := s.client.Do(req)
		if err != nil {
			s.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		loading := resp.StatusCode == http.StatusServiceUnavailable && bytes.Contains(b, []byte(`loading"`))
		if !loading || time.Now().After(deadline) {
			return resp.StatusCode, b
		}
	}
}

// TestServeDraft: `serve --draft ngram` and `--draft PATH` answer a
// greedy completion with the text of a serve without drafts, and
// /metrics counts the draft tokens scored.
func TestServeDraft(t *testing.T) {
	const body = `{"model":"tiny","prompt":"one two three one two three one two","max_tokens":40,"temperature":0,"ignore_eos":true}`
	draftRe := regexp.MustCompile(`(?m)^vllm:spec_decode_num_draft_tokens_total\{model_name="tiny"\} (\d+)$`)
	run := func(args ...string) (text string, drafts uint64) {
		s := newServed(t, args...)
		code, b := s.do("POST", "/v1/completions", body)
		var r struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || code != 200 || len(r.Choices) != 1 {
			t.Fatalf("%v: %d %s (%v)", args, code, b, err)
		}
		_, m := s.do("GET", "/metrics", "")
		sub := draftRe.FindSubmatch(m)
		if sub == nil {
			t.Fatalf("%v: metrics lack the draft tokens:\n%s", args, m)
		}
		drafts, _ = strconv.ParseUint(string(sub[1]), 10, 64)
		if code := s.stop(); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", args, code, s.log.String())
		}
		return r.Choices[0].Text, drafts
	}
	want, n := run()
	if n != 0 {
		t.Errorf("without --draft: %d draft tokens", n)
	}
	for _, args := range [][]string{
		{"--draft", "ngram"},
		{"--draft", "../../testdata/models/qwen2-tiny-Q4_0.gguf", "--draft-max", "3"},
	} {
		got, n := run(args...)
		if got != want {
			t.Errorf("%v: text %q, %q without drafts", args, got, want)
		}
		if n == 0 {
			t.Errorf("%v: no draft tokens in /metrics", args)
		}
	}
}

// TestServeDraftBad: bad --draft and --draft-max values end serve with
// an error before it listens; a draft model of another vocabulary than
// the model's makes the model fail to load with that said in the log.
func TestServeDraftBad(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--draft-max", "4"}, "--draft-max must be in [1, 64], with --draft; got 4"},
		{[]string{"--draft", "ngram", "--draft-max", "65"}, "--draft-max must be in [1, 64], with --draft; got 65"},
		{[]string{"--draft", "ngram", "--draft-max", "-1"}, "--draft-max must be in [1, 64], with --draft; got -1"},
		{[]string{"--draft", "/nonexistent/draft"}, "error: --draft: "},
		{[]string{"--draft-max", "x"}, "invalid value \"x\" for flag -draft-max"},
	} {
		var errb bytes.Buffer
		code := runServe(context.Background(), append([]string{"--model", "tiny=" + tinyDir, "--addr", "127.0.0.1:0"}, c.args...), &errb)
		if code == 0 || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "listening") {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", c.args, code, errb.String(), c.want)
		}
	}

	s := newServed(t, "--draft", testmodel.OtherVocab(t, tinyDir))
	code, b := s.do("GET", "/health", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(b), `"tiny":"failed"`) {
		t.Errorf("health %d %s; want 503 with tiny failed", code, b)
	}
	if log := s.log.String(); !strings.Contains(log, "draft model vocabulary differs") || !strings.Contains(log, `msg="model failed to load"`) {
		t.Errorf("the log does not say the draft's vocabulary differs:\n%s", log)
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d:\n%s", code, s.log.String())
	}
}
