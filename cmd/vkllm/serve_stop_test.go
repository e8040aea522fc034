package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vkllm/vkllm/server"
)

// startServe runs `vkllm serve` in-process with args and an interrupt
// channel, and returns its base URL and exit status channel.
func startServe(t *testing.T, intr chan os.Signal, args ...string) (string, *syncBuf, chan int) {
	t.Helper()
	var log syncBuf
	e := testEnv(strings.NewReader(""), &log, &log)
	e.signals = func() <-chan os.Signal { return intr }
	done := make(chan int, 1)
	go func() {
		done <- vkllm(context.Background(), e, slices.Concat([]string{"serve"}, serveArgs, args))
	}()
	return servingURL(t, &log), &log, done
}

// longStream starts a stream that runs for a while and reads its first
// line.
func longStream(t *testing.T, base string) *bufio.Reader {
	t.Helper()
	resp, err := http.Post(base+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":250,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return rd
}

// TestServeStops: at the drain deadline a stream still running ends with
// an error event and [DONE]; a second signal during the drain stops the
// server at once.
func TestServeStops(t *testing.T) {
	t.Run("drain deadline", func(t *testing.T) {
		intr := make(chan os.Signal, 1)
		base, log, done := startServe(t, intr, "--drain", "1ms", "--backend", "cpu-ref") // 250 tokens take far longer than 1 ms
		rd := longStream(t, base)
		intr <- syscall.SIGTERM
		var last []string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				break
			}
			if s, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				last = append(last[max(0, len(last)-1):], s)
			}
		}
		if len(last) != 2 || last[1] != "[DONE]" || !strings.Contains(last[0], "server_shutting_down") {
			t.Fatalf("the stream ends with %q; want an error event and [DONE]\n%s", last, log.String())
		}
		if code := <-done; code != 0 {
			t.Fatalf("exit %d\n%s", code, log.String())
		}
	})
	t.Run("second signal", func(t *testing.T) {
		intr := make(chan os.Signal, 1)
		base, log, done := startServe(t, intr, "--drain", "1m", "--backend", "cpu-ref")
		longStream(t, base)
		for range 40 { // work for far longer than the 5 s allowed below: 10 rounds of 4 × 250 tokens
			go func() {
				if resp, err := http.Post(base+"/v1/completions", "application/json",
					strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":250,"ignore_eos":true}`)); err == nil {
					resp.Body.Close()
				}
			}()
		}
		start := time.Now()
		time.Sleep(300 * time.Millisecond)
		intr <- syscall.SIGTERM
		time.Sleep(200 * time.Millisecond)
		intr <- syscall.SIGTERM
		select {
		case <-done:
			t.Logf("stopped %s after the work began", time.Since(start))
		case <-time.After(5 * time.Second):
			t.Fatalf("still running 5 s after the second signal\n%s", log.String())
		}
	})
}

// TestServeAPIKeyNotPrinted: a key from the environment or a file is
// never printed, by -h nor by a flag error.
func TestServeAPIKeyNotPrinted(t *testing.T) {
	const key = "sk-very-secret-42"
	t.Setenv("VKLLM_API_KEY", key)
	for _, args := range [][]string{{"-h"}, {"--bogus"}, {"--model", "nonsense"}} {
		var errb bytes.Buffer
		runServe(context.Background(), args, &errb)
		if strings.Contains(errb.String(), key) {
			t.Errorf("%v prints the key:\n%s", args, errb.String())
		}
	}
}

// TestReadKeys: the key file's keys (with their limits), else the
// environment's key as "default", else none.
func TestReadKeys(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	os.WriteFile(file, []byte("  from-file \nalice sk-a concurrency=2 tpm=300\n"), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("alice sk-secret tpm=lots\n"), 0o600)
	t.Setenv("VKLLM_API_KEY", "from-env")
	for _, c := range []struct {
		path  string
		want  []server.Key
		fails bool
	}{
		{"", []server.Key{{ID: "default", Secret: "from-env"}}, false},
		{file, []server.Key{{ID: "key-1", Secret: "from-file"}, {ID: "alice", Secret: "sk-a", Concurrency: 2, TPM: 300}}, false},
		{empty, nil, true},
		{bad, nil, true},
		{filepath.Join(dir, "missing"), nil, true},
	} {
		got, err := readKeys(c.path)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || (err != nil) != c.fails {
			t.Errorf("readKeys(%q) = %v, %v; want %v (fails %v)", c.path, got, err, c.want, c.fails)
		}
		if err != nil && strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	t.Setenv("VKLLM_API_KEY", "")
	if got, err := readKeys(""); got != nil || err != nil {
		t.Errorf("no key: %v, %v", got, err)
	}
}

// TestReloadKeys: a reload (SIGHUP) replaces the keys with the file's;
// a bad file keeps the old ones; the log names no key.
func TestReloadKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(file, []byte("alice sk-a concurrency=1\n"), 0o600)
	list, err := readKeys(file)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := server.NewKeys(list)
	if err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logb, nil))
	os.WriteFile(file, []byte("alice sk-a concurrency=4 tpm=100\nbob sk-b\n"), 0o600)
	reloadKeys(file, keys, log)
	if k, ok := keys.Key("alice"); !ok || k.Concurrency != 4 || k.TPM != 100 {
		t.Errorf("alice after reload: %+v %v", k, ok)
	}
	if _, ok := keys.Key("bob"); !ok {
		t.Error("bob not added")
	}
	os.WriteFile(file, []byte("alice sk-a concurrency=oops\n"), 0o600)
	reloadKeys(file, keys, log)
	if k, _ := keys.Key("alice"); k.Concurrency != 4 {
		t.Errorf("a bad file changed the keys: %+v", k)
	}
	if _, ok := keys.Key("bob"); !ok {
		t.Error("a bad file removed bob")
	}
	if !strings.Contains(logb.String(), "not reloaded") || strings.Contains(logb.String(), "sk-") {
		t.Errorf("log:\n%s", logb.String())
	}
}
