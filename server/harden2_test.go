package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

// blockEmbedder is a fakeGen whose embeddings wait for their context.
type blockEmbedder struct {
	fakeGen
	started chan struct{}
}

func (b *blockEmbedder) EmbedConfig() (engine.EmbedConfig, error) {
	return engine.EmbedConfig{Size: 4, MaxTokens: 64}, nil
}

func (b *blockEmbedder) Embed(ctx context.Context, inputs []string, opts engine.EmbedOptions) ([]engine.Embedding, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blockEmbedder) EmbedTokens(ctx context.Context, inputs [][]int32, opts engine.EmbedOptions) ([]engine.Embedding, error) {
	return b.Embed(ctx, nil, opts)
}

// TestSmallHardening: the small holes of the second hardening round
// answer 400 (or, for a client that left, log no internal error).
func TestSmallHardening(t *testing.T) {
	ts, _ := newFakeServer(t, "no call here")
	for _, c := range []struct{ name, body, param string }{
		{"case-folded key", `{"model":"fake","messages":[{"role":"user","content":"a"}],"max_tokens":1,"MAX_TOKENS":7}`, "MAX_TOKENS"},
		{"case-folded key alone", `{"model":"fake","messages":[{"role":"user","content":"a"}],"Max_Tokens":7}`, "Max_Tokens"},
		{"case-folded message key", `{"model":"fake","messages":[{"role":"user","Role":"system","content":"a"}]}`, "messages[0].Role"},
		{"duplicate key", `{"model":"fake","messages":[{"role":"user","content":"a"}],"max_tokens":1,"max_tokens":7}`, "max_tokens"},
		{"duplicate nested key", `{"model":"fake","messages":[{"role":"user","content":"a","content":"b"}]}`, "messages[0].content"},
		{"logit_bias +1", `{"model":"fake","messages":[{"role":"user","content":"a"}],"logit_bias":{"+1":5}}`, "logit_bias"},
		{"logit_bias 01", `{"model":"fake","messages":[{"role":"user","content":"a"}],"logit_bias":{"01":5}}`, "logit_bias"},
		{"huge stop", `{"model":"fake","messages":[{"role":"user","content":"a"}],"stop":"` + strings.Repeat("x", 64<<10) + `"}`, "stop"},
		{"many stops", `{"model":"fake","messages":[{"role":"user","content":"a"}],"stop":[` + strings.Repeat(`"x",`, 100) + `"y"]}`, "stop"},
		{"stop cuts a forced call", `{"model":"fake","messages":[{"role":"user","content":"a"}],"stop":["{"],"tool_choice":"required",` +
			`"tools":[{"type":"function","function":{"name":"f"}}]}`, "stop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, b := ts.do("POST", "/v1/chat/completions", "application/json", c.body)
			e := errorBody(t, b)
			if code != http.StatusBadRequest || e["param"] != c.param {
				t.Fatalf("%d %s, want a 400 naming %s", code, b, c.param)
			}
		})
	}
	// A valid logit_bias key still works.
	if code, _, b := ts.do("POST", "/v1/chat/completions", "application/json",
		`{"model":"fake","messages":[{"role":"user","content":"a"}],"logit_bias":{"1":5,"10":-1}}`); code != http.StatusOK {
		t.Fatalf("logit_bias 1 and 10: %d %s", code, b)
	}

	t.Run("embeddings client leaves", func(t *testing.T) {
		tok, err := tokenizer.FromFile(tinyDir)
		if err != nil {
			t.Fatal(err)
		}
		g := &blockEmbedder{fakeGen: fakeGen{tok: tok}, started: make(chan struct{}, 1)}
		logged := &logCapture{}
		ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}}, Logger: slog.New(logged),
			Open: func(Spec) (*Model, error) { return &Model{Gen: g}, nil }})
		ts.waitLoaded()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.hs.URL+"/v1/embeddings", strings.NewReader(`{"model":"fake","input":"a"}`))
		req.Header.Set("Content-Type", "application/json")
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := (&http.Client{Transport: ts.tr}).Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-g.started
		cancel()
		<-done
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(logged.String(), "path=/v1/embeddings") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		log := logged.String()
		if strings.Contains(log, "ERROR") || !strings.Contains(log, "status=499") {
			t.Fatalf("log:\n%s\nwant no ERROR and status 499", log)
		}
	})
}

// TestManySmallMessages: bodies of many tiny messages (empty ones, whose text is no bound) are refused
// (400 too_many_messages) as they are decoded, before any message is
// rendered: concurrent ones cost about their bodies, to chat and to
// /tokenize alike.
func TestManySmallMessages(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	const clients, msgs = 4, 20000
	items := strings.Repeat(`{"role":"user","content":""},`, msgs-1) + `{"role":"user","content":"a"}]}`
	for _, c := range []struct{ path, field string }{
		{"/v1/chat/completions", "messages"}, {"/tokenize", "messages"}, {"/v1/responses", "input"},
	} {
		path, body := c.path, `{"model":"tiny","`+c.field+`":[`+items
		t.Run(path, func(t *testing.T) {
			bodies := make([][]byte, clients)
			codes := make([]int, clients)
			grew := heapPeak(func() {
				var wg sync.WaitGroup
				for i := range clients {
					wg.Go(func() {
						resp, err := http.Post(ts.hs.URL+path, "application/json", strings.NewReader(body))
						if err != nil {
							t.Error(err)
							return
						}
						defer resp.Body.Close()
						codes[i] = resp.StatusCode
						bodies[i], _ = io.ReadAll(resp.Body)
					})
				}
				wg.Wait()
			})
			t.Logf("heap grew by %.1f MiB with %d concurrent bodies of %d messages (%d KiB)", grew, clients, msgs, len(body)>>10)
			for i := range clients {
				e := errorBody(t, bodies[i])
				if codes[i] != http.StatusBadRequest || e["code"] != "too_many_messages" || e["param"] != c.field {
					t.Fatalf("client %d: %d %s, want 400 too_many_messages", i, codes[i], bodies[i])
				}
			}
			// The bodies, read and walked: about 4 × 0.6 MiB, far below
			// what decoding and rendering 20,000 messages each costs.
			if grew > 24 {
				t.Errorf("heap grew by %.1f MiB; want at most 24", grew)
			}
		})
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	ts.settle()
}

// TestHugeEmbeddingInputs: concurrent embedding inputs far longer than
// the context are refused (400) for the memory of their bodies, not of
// tokenising them.
func TestHugeEmbeddingInputs(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	const clients, size = 8, 3 << 20
	body := `{"model":"tiny","input":["a","` + strings.Repeat("the sea ", size/8) + `"]}`
	codes, grew := postAtOnce(t, ts.hs.URL+"/v1/embeddings", body, clients)
	t.Logf("heap grew by %.0f MiB with %d concurrent %d MiB inputs", grew, clients, size>>20)
	for i, c := range codes {
		if c != http.StatusBadRequest {
			t.Errorf("client %d: status %d, want 400", i, c)
		}
	}
	// The bodies themselves, read and decoded: about 2 × 8 × 3 MiB.
	if grew > 160 {
		t.Errorf("heap grew by %.0f MiB; want at most 160 (the bodies, not their tokens)", grew)
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	ts.settle()
}

// holdGen sends `tokens` tokens (each delta with the running Usage, as
// the engine's) and then waits for its context: a stream its client
// leaves.
type holdGen struct {
	fakeGen
	tokens int
	sent   chan struct{} // closed when the tokens are sent
	once   sync.Once
}

func (g *holdGen) Stream(ctx context.Context, _ string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return func(yield func(engine.Delta, error) bool) {
		for i := range g.tokens {
			d := engine.Delta{Output: engine.Output{NewTokens: []int32{int32(i % 100)}, TextDelta: "x",
				Usage: engine.Usage{PromptTokens: 7, CompletionTokens: i + 1}}}
			if !yield(d, nil) {
				return
			}
		}
		g.once.Do(func() { close(g.sent) })
		<-ctx.Done()
		yield(engine.Delta{}, ctx.Err())
	}
}

func (g *holdGen) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return g.Stream(ctx, "", p, opts...)
}

// TestTokensChargedAsSent: a key's tokens are charged as they are sent,
// so a stream its client leaves before its end pays for what it got:
// the key is over its TPM at once, while the stream is still open and
// after it, and the request log shows the tokens of the request that
// was left.
func TestTokensChargedAsSent(t *testing.T) {
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	g := &holdGen{fakeGen: fakeGen{tok: tok, reply: "a"}, tokens: 150, sent: make(chan struct{})}
	keys, err := NewKeys([]Key{{ID: "k", Secret: "s", TPM: 100}})
	if err != nil {
		t.Fatal(err)
	}
	logged := &logCapture{}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}}, Keys: keys, Logger: slog.New(logged),
		Open: func(Spec) (*Model, error) { return &Model{Gen: g}, nil }})
	ts.waitLoaded()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.hs.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"a"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer s")
	resp, err := (&http.Client{Transport: ts.tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-g.sent
	// probe is the status of another request of the key (0: no answer
	// within 2 s: it was admitted and waits on holdGen).
	probe := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.hs.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"fake","messages":[{"role":"user","content":"a"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer s")
		resp, err := (&http.Client{Transport: ts.tr}).Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The stream is open, its 150 tokens sent: the key has spent them.
	if code := probe(); code != http.StatusTooManyRequests {
		t.Errorf("while the stream is open: status %d, want 429", code)
	}
	cancel() // the client leaves
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logged.String(), "status=200") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if code := probe(); code != http.StatusTooManyRequests {
		t.Errorf("after the stream was left: status %d, want 429", code)
	}
	var left string
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "status=200") { // the stream had begun
			left = l
		}
	}
	if !strings.Contains(left, "prompt_tokens=7") || !strings.Contains(left, "completion_tokens=150") {
		t.Errorf("the left request's log record %q, want prompt_tokens=7 completion_tokens=150; log:\n%s", left, logged)
	}
}

// TestHostCheck: a server without a key answers only its own names as
// Host (IP literals, localhost, AllowedHosts), so a page rebound to it
// by DNS gets a 403; with a key, any Host is served.
func TestHostCheck(t *testing.T) {
	ts, _ := newFakeServer(t, "hi")
	ts.srv.cfg.AllowedHosts = []string{"vkllm.internal", ".corp.example"}
	keyed := newTestServer(t, Config{APIKey: "k", Models: []Spec{{Name: "fake", Path: "-"}},
		Open: func(Spec) (*Model, error) { return ts.srv.entries[0].m, nil }})
	keyed.waitLoaded()
	chatBody := `{"model":"fake","messages":[{"role":"user","content":"a"}]}`
	status := func(ts *testServer, method, path, host string) int {
		req, _ := http.NewRequest(method, ts.hs.URL+path, strings.NewReader(chatBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		resp, err := (&http.Client{Transport: ts.tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		host string
		want int
	}{
		{ts.hs.Listener.Addr().String(), 200}, {"localhost:8080", 200}, {"LOCALHOST", 200}, {"app.localhost", 200},
		{"[::1]:8080", 200}, {"10.1.2.3", 200}, {"vkllm.internal:8080", 200}, {"gpu.corp.example", 200},
		{"rebind.attacker.example", 403}, {"attacker.example:8080", 403}, {"vkllm.internal.attacker.example", 403},
	} {
		for _, ep := range []struct{ method, path string }{{"POST", "/v1/chat/completions"}, {"GET", "/"}, {"GET", "/v1/models"}} {
			if got := status(ts, ep.method, ep.path, c.host); got != c.want {
				t.Errorf("keyless, Host %q, %s %s: %d, want %d", c.host, ep.method, ep.path, got, c.want)
			}
		}
	}
	if got := status(keyed, "POST", "/v1/chat/completions", "rebind.attacker.example"); got != 200 {
		t.Errorf("with a key, Host rebind.attacker.example: %d, want 200", got)
	}
}

// TestCacheScopedByKey: with API keys, one key's prompts are not served
// from another's cache: neither its inference-cache answer nor its
// cached prefix shows in the other key's cached_tokens, while a key
// still reuses its own; with SharedCache the keys share both.
func TestCacheScopedByKey(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared ", shared), func(t *testing.T) {
			keys, err := NewKeys([]Key{{ID: "a", Secret: "sa"}, {ID: "b", Secret: "sb"}})
			if err != nil {
				t.Fatal(err)
			}
			ts := newTestServer(t, Config{Keys: keys, SharedCache: shared})
			ts.waitLoaded()
			prompts := []string{strings.Repeat("the quick brown fox jumps over the lazy dog ", 6),
				strings.Repeat("a tale of two cities and of the sea ", 6)}
			cached := func(secret string, prompt, maxTokens int) (int, int) {
				code, _, b := ts.do("POST", "/v1/chat/completions", "application/json",
					fmt.Sprintf(`{"model":"tiny","temperature":0,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`, maxTokens, prompts[prompt]),
					"Authorization", "Bearer "+secret)
				if code != 200 {
					t.Fatalf("%d %s", code, b)
				}
				var resp struct {
					Usage struct {
						PromptTokens int `json:"prompt_tokens"`
						Details      struct {
							Cached int `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					} `json:"usage"`
				}
				json.Unmarshal(b, &resp)
				ts.settleRunning()
				return resp.Usage.Details.Cached, resp.Usage.PromptTokens
			}
			cached("sa", 0, 2)
			cached("sa", 1, 2)
			same, n := cached("sb", 0, 2)   // a's request again: its inference-cache answer?
			prefix, _ := cached("sb", 1, 3) // a's prompt: its cached prefix?
			own, _ := cached("sa", 1, 4)    // a's own prefix
			t.Logf("prompt %d tokens: b's repeat of a's request %d cached, b's same prompt %d, a's own %d", n, same, prefix, own)
			if own == 0 {
				t.Fatalf("a's own prefix was not reused")
			}
			if shared {
				if same != n || prefix == 0 {
					t.Errorf("shared caches: b got %d and %d cached tokens of a's, want %d and > 0", same, prefix, n)
				}
				return
			}
			if same != 0 || prefix != 0 {
				t.Errorf("b got %d (repeat) and %d (prefix) cached tokens of a's prompt; want 0", same, prefix)
			}
		})
	}
}

// settleRunning waits (at most 5 s) until the first model runs and
// queues no request, its caches kept.
func (ts *testServer) settleRunning() {
	ts.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for st := ts.gen().Stats(); st.Running != 0 || st.Waiting != 0; st = ts.gen().Stats() {
		if time.Now().After(deadline) {
			ts.t.Fatalf("not settled: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
