package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// The server tests' helpers: a server on httptest, requests and error
// bodies, and fakeGen, a Generator that replays a fixed reply.

const tinyDir = "../testdata/models/qwen2-tiny"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testServer is a Server on httptest with its own client transport.
type testServer struct {
	t   testing.TB
	srv *Server
	hs  *httptest.Server
	tr  *http.Transport
}

func tinyOptions() engine.Options {
	return engine.Options{ContextLen: 1024, MaxSeqs: 4, Model: []models.Option{models.WithBackendName("cpu", kernels.Options{})}}
}

// newTestServer starts a server with cfg (default: the tiny model as
// "tiny") and waits until it is loaded.
func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	if cfg.Models == nil {
		cfg.Models = []Spec{{Name: "tiny", Path: tinyDir}}
	}
	if cfg.Open == nil {
		cfg.Engine = tinyOptions()
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t, srv: srv, hs: httptest.NewServer(srv.Handler()), tr: &http.Transport{}}
	t.Cleanup(ts.close)
	return ts
}

func (ts *testServer) waitLoaded() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ts.srv.WaitLoaded(ctx); err != nil {
		ts.t.Fatal(err)
	}
}

func (ts *testServer) close() {
	ts.tr.CloseIdleConnections()
	ts.hs.Close()
	ts.srv.Close()
}

func (ts *testServer) client(opts ...option.RequestOption) openai.Client {
	base := []option.RequestOption{option.WithBaseURL(ts.hs.URL + "/v1/"), option.WithAPIKey("none"),
		option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Transport: ts.tr})}
	return openai.NewClient(append(base, opts...)...)
}

// gen is the first model's generator.
func (ts *testServer) gen() Generator { return ts.srv.entries[0].m.Gen }

// settle waits (at most 5 s) until the first model has no request and,
// once its prefix cache is cleared, no KV cell in use (a leak), and fails
// the test otherwise.
func (ts *testServer) settle() {
	ts.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := ts.gen().Stats()
		if st.Running == 0 && st.Waiting == 0 {
			if c, ok := ts.gen().(interface{ ClearCache() error }); ok && st.KVUsed != 0 {
				if err := c.ClearCache(); err != nil {
					ts.t.Fatal(err)
				}
				st = ts.gen().Stats()
			}
			if st.KVUsed == 0 && st.Running == 0 && st.Waiting == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("not settled: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// post sends a raw request and returns the status, headers and body.
func (ts *testServer) do(method, path, ctype, body string, hdr ...string) (int, http.Header, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.hs.URL+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{Transport: ts.tr}).Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// errorBody checks b is {"error":{"message","type","param","code"}} with
// a non-empty message and type, and returns it.
func errorBody(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	e, ok := v["error"]
	if !ok || len(v) != 1 {
		t.Fatalf("error body %s has no single \"error\"", b)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("error body %s lacks %q", b, k)
		}
	}
	if m, _ := e["message"].(string); m == "" {
		t.Fatalf("error body %s: empty message", b)
	}
	if m, _ := e["type"].(string); m == "" {
		t.Fatalf("error body %s: empty type", b)
	}
	return e
}

// fakeGen replays a fixed reply and records the chat requests it gets,
// to test tool calls: the tiny random model never writes one.
type fakeGen struct {
	genBase
	tok   *tokenizer.Tokenizer
	reply string
	mu    sync.Mutex
	reqs  []engine.ChatRequest
	shift int // added to every delta's Index: a broken Generator
}

// StreamChat replays the reply as a model that writes Hermes tool calls
// would have it streamed by engine.LLM.StreamChat: with tools offered,
// each choice's text is parsed into content and tool-call deltas, a
// reply with calls finishes with "tool_calls", and a forced call the
// reply lacks ends the stream with engine.ErrNoToolCall (ErrStopCutCall
// when a stop string of the request ended it).
func (f *fakeGen) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if len(req.Tools) == 0 || req.ToolChoice == engine.ToolNone {
		return f.Stream(ctx, "", p, opts...)
	}
	forced := req.ToolChoice != "" && req.ToolChoice != engine.ToolAuto
	return func(yield func(engine.Delta, error) bool) {
		parsers := map[int]*chat.ToolParser{}
		for d, err := range f.Stream(ctx, "", p, opts...) {
			if err != nil {
				yield(d, err)
				return
			}
			pr := parsers[d.Index]
			if pr == nil {
				pr = chat.NewToolParser(chat.FormatQwen, nil)
				parsers[d.Index] = pr
			}
			d.TextDelta, d.ToolCalls = pr.Add(d.TextDelta)
			if d.Finished {
				rest, more, _ := pr.Finish()
				d.TextDelta, d.ToolCalls = d.TextDelta+rest, append(d.ToolCalls, more...)
				if len(pr.Calls()) == 0 && forced && d.FinishReason == "stop" && len(p.Stop) > 0 {
					yield(engine.Delta{}, engine.ErrStopCutCall)
					return
				}
				if len(pr.Calls()) == 0 && forced {
					yield(engine.Delta{}, engine.ErrNoToolCall)
					return
				}
				if len(pr.Calls()) > 0 {
					d.FinishReason = "tool_calls"
				}
			}
			if !yield(d, nil) {
				return
			}
		}
	}
}

// Stream replays the reply word by word for each choice (WithChoices),
// the choices' deltas interleaved.
func (f *fakeGen) Stream(ctx context.Context, _ string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	var r engine.Request
	for _, o := range opts {
		o(&r)
	}
	return func(yield func(engine.Delta, error) bool) {
		words := strings.SplitAfter(f.reply, " ")
		for i, w := range words {
			for c := range max(r.N, 1) {
				if ctx.Err() != nil {
					yield(engine.Delta{}, ctx.Err())
					return
				}
				d := engine.Delta{Output: engine.Output{Index: c + f.shift, NewTokens: []int32{int32(i)}, TextDelta: w}}
				if i == len(words)-1 {
					d.Finished, d.FinishReason = true, "stop"
					d.Usage = engine.Usage{PromptTokens: 3, CompletionTokens: len(words)}
				}
				if !yield(d, nil) {
					return
				}
			}
		}
	}
}

func (f *fakeGen) StreamTokens(ctx context.Context, _ []int32, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return f.Stream(ctx, "", p, opts...)
}

// genBase is what a fake Generator has of the capabilities it lacks:
// no queue bound, no max_model_len, nothing to clear, no tokenizing on
// request nor embeddings (errors.ErrUnsupported).
type genBase struct{}

func (genBase) MaxPending() int         { return math.MaxInt }
func (genBase) MaxLen() int             { return 0 }
func (genBase) ClearCache() error       { return nil }
func (genBase) Model() *models.Model    { return nil }
func (genBase) ToolFormat() chat.Format { return chat.FormatNone }
func (genBase) Tokenize(string, bool) ([]int32, error) {
	return nil, errors.ErrUnsupported
}
func (genBase) TokenizeChat(engine.ChatRequest, bool) ([]int32, error) {
	return nil, errors.ErrUnsupported
}
func (genBase) Detokenize([]int32) (string, error) { return "", errors.ErrUnsupported }
func (genBase) EmbedConfig() (engine.EmbedConfig, error) {
	return engine.EmbedConfig{}, errors.ErrUnsupported
}
func (genBase) Embed(context.Context, []string, engine.EmbedOptions) ([]engine.Embedding, error) {
	return nil, errors.ErrUnsupported
}
func (genBase) EmbedTokens(context.Context, [][]int32, engine.EmbedOptions) ([]engine.Embedding, error) {
	return nil, errors.ErrUnsupported
}

func (f *fakeGen) Stats() engine.Stats             { return engine.Stats{} }
func (f *fakeGen) Tokenizer() *tokenizer.Tokenizer { return f.tok }
func (f *fakeGen) Close() error                    { return nil }

func optionKey(k string) option.RequestOption { return option.WithAPIKey(k) }
