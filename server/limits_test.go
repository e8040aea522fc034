package server

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
)

// gateGen is a fakeGen whose streams wait for the gate to open (or
// their context to end) before replying.
type gateGen struct {
	fakeGen
	gate    chan struct{}
	once    sync.Once
	started chan struct{}
}

// open lets every stream reply, now and from then on.
func (g *gateGen) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gateGen) Stream(ctx context.Context, s string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return func(yield func(engine.Delta, error) bool) {
		g.started <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			yield(engine.Delta{}, ctx.Err())
			return
		}
		for d, err := range g.fakeGen.Stream(ctx, s, p, opts...) {
			if !yield(d, err) {
				return
			}
		}
	}
}

func (g *gateGen) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return g.Stream(ctx, "", p, opts...)
}

func newGateServer(t *testing.T, keys []Key) (*testServer, *gateGen, *Keys) {
	t.Helper()
	tok, err := tokenizer.FromFile(tinyDir)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateGen{fakeGen: fakeGen{tok: tok, reply: "one two three four"}, gate: make(chan struct{}), started: make(chan struct{}, 16)}
	k, err := NewKeys(keys)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Config{Models: []Spec{{Name: "fake", Path: "-"}}, Keys: k,
		Open: func(Spec) (*Model, error) { return &Model{Gen: g}, nil }})
	ts.waitLoaded()
	t.Cleanup(g.open) // before the server closes: a held request ends
	return ts, g, k
}

// rateLimited checks err is a 429 of the limit kind with Retry-After and
// returns its headers.
func rateLimited(t *testing.T, err error, kind string) http.Header {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("got %v, want a 429", err)
	}
	if apiErr.Type != kind || apiErr.Code != "rate_limit_exceeded" {
		t.Errorf("429 type %q code %q, want %q rate_limit_exceeded", apiErr.Type, apiErr.Code, kind)
	}
	h := apiErr.Response.Header
	if h.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	return h
}

// TestKeyConcurrency: a key's requests beyond its concurrency get 429
// with Retry-After and the x-ratelimit-*-requests headers, another key is
// not affected, and the slot is free again when the request ends.
func TestKeyConcurrency(t *testing.T) {
	ts, g, _ := newGateServer(t, []Key{{ID: "alice", Secret: "sk-a", Concurrency: 1}, {ID: "bob", Secret: "sk-b"}})
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "fake", Messages: user("hi")}
	alice, bobC := ts.client(optionKey("sk-a")), ts.client(optionKey("sk-b"))
	done := make(chan error, 1)
	go func() {
		_, err := alice.Chat.Completions.New(ctx, params)
		done <- err
	}()
	<-g.started                                              // alice's first request holds her only slot
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second) // admitted by mistake, it would wait for the gate
	defer cancel()
	_, err := alice.Chat.Completions.New(tctx, params)
	h := rateLimited(t, err, "requests")
	if h.Get("Retry-After") != "1" || h.Get("X-Ratelimit-Reset-Requests") != "1s" || h.Get("X-Ratelimit-Limit-Requests") != "1" || h.Get("X-Ratelimit-Remaining-Requests") != "0" {
		t.Errorf("headers %v", h)
	}
	// Bob has no limit; his request is not refused.
	bob := make(chan error, 1)
	go func() {
		_, err := bobC.Chat.Completions.New(ctx, params)
		bob <- err
	}()
	<-g.started
	g.open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-bob; err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	if _, err := alice.Chat.Completions.New(ctx, params, optionResponse(&resp)); err != nil {
		t.Fatalf("slot not freed: %v", err)
	}
	<-g.started
	if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
		t.Errorf("remaining requests while running %q, want 0", got)
	}
}

// TestKeyTPM: a key past its tokens per minute gets 429 with
// Retry-After and the x-ratelimit-*-tokens headers until the minute's
// tokens age out; a reload (Keys.Set) raising the limit admits it again.
func TestKeyTPM(t *testing.T) {
	ts, g, keys := newGateServer(t, []Key{{ID: "alice", Secret: "sk-a", TPM: 5}})
	g.open()
	now := time.Now()
	keys.now = func() time.Time { return now }
	ctx := context.Background()
	c := ts.client(optionKey("sk-a"))
	params := openai.ChatCompletionNewParams{Model: "fake", Messages: user("hi")}
	var resp *http.Response
	if _, err := c.Chat.Completions.New(ctx, params, optionResponse(&resp)); err != nil { // 3 prompt + 4 completion tokens
		t.Fatal(err)
	}
	<-g.started
	if resp.Header.Get("X-Ratelimit-Limit-Tokens") != "5" || resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "5" {
		t.Errorf("first answer's headers %v", resp.Header)
	}
	now = now.Add(20 * time.Second)
	_, err := c.Chat.Completions.New(ctx, params)
	h := rateLimited(t, err, "tokens")
	if h.Get("Retry-After") != "40" || h.Get("X-Ratelimit-Remaining-Tokens") != "0" || h.Get("X-Ratelimit-Reset-Tokens") != "40s" {
		t.Errorf("429 headers %v", h)
	}
	// Reloaded with a higher limit: admitted, the spent tokens kept.
	if err := keys.Set([]Key{{ID: "alice", Secret: "sk-a", TPM: 100}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Chat.Completions.New(ctx, params, optionResponse(&resp)); err != nil {
		t.Fatal(err)
	}
	<-g.started
	if resp.Header.Get("X-Ratelimit-Remaining-Tokens") != "93" {
		t.Errorf("after reload: %v", resp.Header)
	}
	// A minute after the first, its tokens have aged out.
	if err := keys.Set([]Key{{ID: "alice", Secret: "sk-a", TPM: 5}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if _, err := c.Chat.Completions.New(ctx, params); err != nil {
		t.Fatalf("a minute later: %v", err)
	}
	<-g.started
	// A key removed by a reload is refused.
	if err := keys.Set([]Key{{ID: "bob", Secret: "sk-b"}}); err != nil {
		t.Fatal(err)
	}
	status, _, _ := ts.do("POST", "/v1/chat/completions", "application/json", `{"model":"fake","messages":[{"role":"user","content":"hi"}]}`,
		"Authorization", "Bearer sk-a")
	if status != http.StatusUnauthorized {
		t.Errorf("removed key: status %d", status)
	}
}

// TestKeyTPMOneReset: a 429 for tokens gives one reset time, when
// enough of the minute's tokens have aged out (not when the oldest
// does), in Retry-After, X-Ratelimit-Reset-Tokens and the message.
func TestKeyTPMOneReset(t *testing.T) {
	keys, err := NewKeys([]Key{{ID: "alice", Secret: "sk-a", TPM: 5}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	keys.now = func() time.Time { return now }
	key, _ := keys.find("sk-a")
	spend := func(tokens int) {
		if _, refused := keys.admit(key); refused != nil {
			t.Fatalf("refused: %+v", refused)
		}
		keys.release(key, tokens)
	}
	spend(3)
	now = now.Add(10300 * time.Millisecond)
	spend(10)
	now = now.Add(9700 * time.Millisecond) // 20 s in: the 10 tokens age out in 50.3 s
	h, refused := keys.admit(key)
	if refused == nil {
		t.Fatal("admitted past the limit")
	}
	e := refused.error(key)
	if e.RetryAfter != 51 || h.Get("X-Ratelimit-Reset-Tokens") != "51s" || !strings.Contains(e.Message, "retry in 51s") {
		t.Errorf("Retry-After %d, X-Ratelimit-Reset-Tokens %q, message %q; want 51 s in each", e.RetryAfter, h.Get("X-Ratelimit-Reset-Tokens"), e.Message)
	}
}

// TestParseKeys: the key file's lines, and its errors, which name the
// line and never the key.
func TestParseKeys(t *testing.T) {
	keys, err := ParseKeys(strings.NewReader("# keys\nsk-lone\n\nalice sk-a concurrency=2 tpm=1000\n  bob\tsk-b tpm=0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Key{{ID: "key-2", Secret: "sk-lone"}, {ID: "alice", Secret: "sk-a", Concurrency: 2, TPM: 1000}, {ID: "bob", Secret: "sk-b"}}
	if len(keys) != len(want) {
		t.Fatalf("keys %+v", keys)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Errorf("key %d: %+v, want %+v", i, keys[i], want[i])
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "alice sk-secret tpm=-1", "alice sk-secret rpm=3", "alice sk-secret tpm=x"} {
		_, err := ParseKeys(strings.NewReader(bad))
		if !errors.Is(err, ErrKeys) || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, bad := range [][]Key{{{ID: "a", Secret: "s"}, {ID: "a", Secret: "t"}}, {{ID: "a", Secret: "s"}, {ID: "b", Secret: "s"}}, {{ID: "", Secret: "s"}}, nil} {
		if _, err := NewKeys(bad); !errors.Is(err, ErrKeys) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func optionResponse(r **http.Response) option.RequestOption { return option.WithResponseInto(r) }
