package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/internal/hubtest"
	"github.com/vkllm/vkllm/internal/testmodel"
)

// standInHub serves the tiny test models as Hub repositories and points
// huggingface_hub's environment (HF_ENDPOINT, HF_HUB_CACHE) at it and a
// fresh cache: test/tiny-GGUF holds two quantisations of qwen2-tiny,
// test/llama-tiny the sharded safetensors folder of llama-tiny,
// test/tiny-split-GGUF the Q8_0 one split in two (gguf-split),
// test/tiny-lora a PEFT adapter of qwen2-tiny and test/tiny-lora-GGUF the
// same adapter as a GGUF file, and test/gated is gated.
func standInHub(t *testing.T) (*hubtest.Hub, string) {
	h := hubtest.New(t)
	h.Token = "hf_good"
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h.Add("test/tiny-GGUF", false, map[string][]byte{
		"README.md":            []byte("tiny\n"),
		"qwen2-tiny-Q4_1.gguf": read("../../testdata/models/qwen2-tiny-Q4_1.gguf"),
		"qwen2-tiny-Q8_0.gguf": read("../../testdata/models/qwen2-tiny-Q8_0.gguf"),
	})
	st := map[string][]byte{}
	ents, _ := os.ReadDir("../../testdata/models/llama-tiny-sharded")
	for _, e := range ents {
		st[e.Name()] = read(filepath.Join("../../testdata/models/llama-tiny-sharded", e.Name()))
	}
	h.Add("test/llama-tiny", false, st)
	split := map[string][]byte{}
	for _, p := range testmodel.SplitGGUF(t, "../../testdata/models/qwen2-tiny-Q8_0.gguf", t.TempDir(), "tiny-Q8_0", 2) {
		split["Q8_0/"+filepath.Base(p)] = read(p)
	}
	h.Add("test/tiny-split-GGUF", false, split)
	h.Add("test/gated", true, map[string][]byte{"m-Q4_1.gguf": read("../../testdata/models/qwen2-tiny-Q4_1.gguf")})
	h.Add("test/tiny-lora", false, map[string][]byte{
		"README.md":                 read(tinyLoRA + "/README.md"),
		"adapter_config.json":       read(tinyLoRA + "/adapter_config.json"),
		"adapter_model.safetensors": read(tinyLoRA + "/adapter_model.safetensors"),
	})
	h.Add("test/tiny-lora-GGUF", false, map[string][]byte{"qwen2-tiny-lora-a-F32.gguf": read(tinyLoRA + "-F32.gguf")})
	cache := t.TempDir()
	t.Setenv("HF_ENDPOINT", h.API.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	t.Setenv("HF_HOME", t.TempDir()) // no token file
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	return h, cache
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = vkllm(context.Background(), testEnv(strings.NewReader(""), &out, &errb), args)
	return code, out.String(), errb.String()
}

func TestPullListRmHub(t *testing.T) {
	_, cache := standInHub(t)
	code, out, errs := run(t, "pull", "hf://test/tiny-GGUF:q4_1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	p := strings.TrimSpace(out)
	if !strings.HasPrefix(p, filepath.Join(cache, "models--test--tiny-GGUF", "snapshots")) || filepath.Base(p) != "qwen2-tiny-Q4_1.gguf" {
		t.Fatalf("pulled to %q", p)
	}
	want, _ := os.ReadFile("../../testdata/models/qwen2-tiny-Q4_1.gguf")
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Fatal("the pulled file differs")
	}
	if !strings.Contains(errs, "pulling test/tiny-GGUF: 100%") {
		t.Errorf("no progress lines off a terminal: %q", errs)
	}
	code, out, errs = run(t, "list")
	if code != 0 || !strings.Contains(out, "hf://test/tiny-GGUF") || !strings.Contains(out, "main (") || !strings.Contains(out, "qwen2-tiny-Q4_1.gguf") || !strings.Contains(out, "67.2 KiB") {
		t.Fatalf("list: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "rm", "hf://test/tiny-GGUF")
	if code != 0 || !strings.Contains(out, "removed hf://test/tiny-GGUF (67.2 KiB freed)") {
		t.Fatalf("rm: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ = run(t, "list"); strings.Contains(out, "tiny") {
		t.Errorf("list after rm:\n%s", out)
	}
	t.Setenv("HF_TOKEN", "hf_good") // the gated repository's files need it
	if code, out, errs := run(t, "pull", "hf://test/gated"); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), "m-Q4_1.gguf") {
		t.Errorf("gated, with HF_TOKEN: exit %d\n%s%s", code, out, errs)
	}
	t.Setenv("HF_TOKEN", "")
	os.RemoveAll(filepath.Join(cache, "models--test--gated"))
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"pull", "hf://test/gated"}, "accept its licence at " + os.Getenv("HF_ENDPOINT") + "/test/gated"},
		{[]string{"pull", "hf://test/tiny-GGUF:Q2_K"}, "has no Q2_K GGUF; it has Q4_1, Q8_0"},
		{[]string{"pull", "hf://test"}, "bad model name"},
		{[]string{"rm", "hf://test/tiny-GGUF"}, "was never pulled"},
		{[]string{"rm", "smollm2"}, "rm takes a Hub name"},
	} {
		if code, _, errs := run(t, c.args...); code != 1 || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %q; want 1 and %q", c.args, code, errs, c.msg)
		}
	}
}

// TestRunHub: `run --model hf://…` generates what the local file does, for
// a GGUF and a safetensors repository, and again offline from the cache.
func TestRunHub(t *testing.T) {
	h, _ := standInHub(t)
	gen := func(model string) []int32 {
		t.Helper()
		code, out, errs := run(t, "run", "--model", model, "--backend", "cpu", "--prompt", "Hello", "--max-tokens", "4", "--ignore-eos", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", model, code, errs)
		}
		var r Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Tokens
	}
	for _, c := range []struct{ name, local string }{
		{"hf://test/tiny-GGUF:Q8_0", "../../testdata/models/qwen2-tiny-Q8_0.gguf"},
		{"hf://test/llama-tiny", "../../testdata/models/llama-tiny-sharded"},
		{"hf://test/tiny-split-GGUF:q8_0", "../../testdata/models/qwen2-tiny-Q8_0.gguf"},
	} {
		want := gen(c.local)
		if got := gen(c.name); !slices.Equal(got, want) {
			t.Errorf("%s: tokens %v, the local model's %v", c.name, got, want)
		}
	}
	h.API.Close()
	t.Setenv("HF_HUB_OFFLINE", "1")
	if got, want := gen("hf://test/llama-tiny"), gen("../../testdata/models/llama-tiny-sharded"); !slices.Equal(got, want) {
		t.Errorf("offline: tokens %v, want %v", got, want)
	}
}

func TestServeHub(t *testing.T) {
	standInHub(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, log, done := serveUntil(ctx, t, "--model", "hub=hf://test/tiny-GGUF:Q4_1")
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Contains(ids, "hub") {
		t.Errorf("models %v lack the Hub one\n%s", ids, log.String())
	}
	cancel()
	<-done
}

func TestResolveFlags(t *testing.T) {
	_, cache := standInHub(t)
	args := []string{"--pp", "4", "--model", "hf://test/tiny-GGUF:Q4_1", "-peer-model=hf://test/tiny-GGUF:Q8_0", "--tg", "2", "--draft", "hf://test/tiny-GGUF:Q8_0", "--draft-max", "3", "--", "--model", "hf://x/y"}
	got, err := resolveFlags(context.Background(), &bytes.Buffer{}, args, benchPathFlags...)
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(cache, "models--test--tiny-GGUF", "snapshots")
	if !strings.HasPrefix(got[3], snap) || !strings.HasPrefix(got[4], "-peer-model="+snap) || !strings.HasPrefix(got[8], snap) || got[13] != "hf://x/y" || got[2] != "--model" {
		t.Errorf("resolved %q", got)
	}
	if code, out, errs := run(t, "bench", "--model", "hf://test/tiny-GGUF:Q4_1", "--backend", "cpu", "--pp", "4", "--tg", "2", "--no-bandwidth", "--json"); code != 0 || !strings.Contains(out, "qwen2-tiny-Q4_1.gguf") {
		t.Errorf("bench: exit %d\n%s%s", code, out, errs)
	}
}

func TestInspectHub(t *testing.T) {
	standInHub(t)
	code, out, errs := run(t, "inspect", "hf://test/tiny-split-GGUF:Q8_0")
	if code != 0 || !strings.Contains(out, "qwen2") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

// TestDraftHub: --draft takes a Hub name as --model does.
func TestDraftHub(t *testing.T) {
	standInHub(t)
	code, _, errs := run(t, "run", "--model", tinyDir, "--backend", "cpu", "--prompt", "one two one two", "--max-tokens", "8", "--draft", "hf://test/tiny-GGUF:Q4_1", "--draft-max", "3")
	if code != 0 || !strings.Contains(errs, "drafts: ") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestTokenizeHub: tokenize's --model takes a Hub name as run's does (a
// GGUF file, a safetensors folder): the ids are the local model's.
func TestTokenizeHub(t *testing.T) {
	standInHub(t)
	ids := func(model string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := vkllm(context.Background(), testEnv(strings.NewReader("Hello world, hello Hub"), &out, &errb), []string{"tokenize", "--model", model}); code != 0 {
			t.Fatalf("%s: exit %d: %s", model, code, errb.String())
		}
		return out.String()
	}
	for _, c := range []struct{ name, local string }{
		{"hf://test/tiny-GGUF:Q4_1", "../../testdata/models/qwen2-tiny-Q4_1.gguf"},
		{"hf://test/llama-tiny", "../../testdata/models/llama-tiny-sharded"},
	} {
		if got, want := ids(c.name), ids(c.local); got != want || want == "" {
			t.Errorf("%s: ids %q, the local model's %q", c.name, got, want)
		}
	}
	if code, _, errs := run(t, "tokenize", "--model", "hf://test/tiny-GGUF:Q2_K"); code != 1 || !strings.Contains(errs, "--model: ") || !strings.Contains(errs, "has no Q2_K GGUF") {
		t.Errorf("a name with no file: exit %d, %q", code, errs)
	}
}

// TestLoRAHub: run's and serve's --lora take a Hub name as --model does:
// a PEFT adapter's repository (pulled as its folder) and a GGUF adapter's
// give the tokens of the local adapter.
func TestLoRAHub(t *testing.T) {
	standInHub(t)
	gen := func(lora string) []int32 {
		t.Helper()
		code, out, errs := run(t, "run", "--model", tinyDir, "--backend", "cpu", "--prompt", "Hello world", "--max-tokens", "8", "--ignore-eos", "--json", "--lora", lora)
		if code != 0 {
			t.Fatalf("--lora %s: exit %d: %s", lora, code, errs)
		}
		var r Result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Tokens
	}
	want := gen(tinyLoRA)
	for _, name := range []string{"hf://test/tiny-lora", "hf://test/tiny-lora-GGUF"} {
		if got := gen(name); !slices.Equal(got, want) {
			t.Errorf("--lora %s: tokens %v, the local adapter's %v", name, got, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, log, done := serveUntil(ctx, t, "--lora", "a=hf://test/tiny-lora")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if status, b := send(t, http.DefaultClient, "GET", url+"/v1/models", ""); status == 200 && strings.Contains(string(b), `"id":"tiny:a"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --lora a=hf://…: no model tiny:a\n%s", log.String())
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve: exit %d\n%s", code, log.String())
	}
}
