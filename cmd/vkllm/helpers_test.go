package main

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildCommand builds vkllm into a temporary folder and returns the
// binary's path; in -short mode it skips the test.
func buildCommand(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "vkllm")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serveArgs are the flags every in-process `vkllm serve` test starts
// with: the tiny model on a free local port, the CPU backend, a small
// cache. Flags given after them win.
var serveArgs = []string{"--model", "tiny=" + tinyDir, "--addr", "127.0.0.1:0",
	"--backend", "cpu", "--ctx", "1024", "--max-seqs", "4"}

// servingRe matches the log line with which the server says where it
// listens.
var servingRe = regexp.MustCompile(`serving on (http://[^\s"]+)`)

// servingURL waits up to 30 s for the "serving on URL" line in log and
// returns the URL.
func servingURL(t *testing.T, log *syncBuf) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if m := servingRe.FindStringSubmatch(log.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address logged:\n%s", log.String())
		}
	}
}

// serveUntil runs `vkllm serve` in-process (runServe) with serveArgs and
// then args until ctx ends, and returns its base URL, its log and the
// channel that gets its exit status.
func serveUntil(ctx context.Context, t *testing.T, args ...string) (string, *syncBuf, chan int) {
	t.Helper()
	log := &syncBuf{}
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, slices.Concat(serveArgs, args), log) }()
	return servingURL(t, log), log, done
}

// send sends a request to url, with body as JSON (no body when ""), and
// returns the response's status and body.
func send(t *testing.T, client *http.Client, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
