package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

func user(s string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(s)}
}

func TestChat(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "tiny", Messages: user("Hello there"), MaxTokens: openai.Int(8), Temperature: openai.Float(0),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The same conversation straight through the engine.
	want, err := ts.gen().(*engine.LLM).Chat(ctx, engine.ChatRequest{Messages: chatUser("Hello there")}, sampler.Params{MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != want.Text || string(resp.Choices[0].FinishReason) != want.FinishReason {
		t.Fatalf("server %+v, engine %q %s", resp.Choices, want.Text, want.FinishReason)
	}
	if resp.Object != "chat.completion" || resp.Model != "tiny" || !strings.HasPrefix(resp.ID, "chatcmpl-") {
		t.Errorf("envelope: %s %s %s", resp.Object, resp.Model, resp.ID)
	}
	u := resp.Usage
	if u.PromptTokens != int64(want.Usage.PromptTokens) || u.CompletionTokens != int64(want.Usage.CompletionTokens) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v, want %+v", u, want.Usage)
	}

	// Streaming gives the same text, chunk by chunk, then a usage chunk.
	st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "tiny", Messages: user("Hello there"), MaxTokens: openai.Int(8), Temperature: openai.Float(0),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var text strings.Builder
	var chunks int
	var finish string
	var usage *openai.CompletionUsage
	for st.Next() {
		ch := st.Current()
		if ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", ch.Object)
		}
		if len(ch.Choices) == 0 {
			if ch.Usage.TotalTokens == 0 {
				t.Fatalf("chunk without choices or usage: %s", ch.RawJSON())
			}
			usage = &ch.Usage
			continue
		}
		if usage != nil {
			t.Fatal("a choice chunk after the usage chunk")
		}
		chunks++
		text.WriteString(ch.Choices[0].Delta.Content)
		if ch.Choices[0].FinishReason != "" {
			finish = ch.Choices[0].FinishReason
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if text.String() != want.Text || finish != want.FinishReason || chunks < 2 {
		t.Fatalf("stream %q %q in %d chunks, want %q %q", text.String(), finish, chunks, want.Text, want.FinishReason)
	}
	if usage == nil || usage.CompletionTokens != int64(want.Usage.CompletionTokens) {
		t.Fatalf("usage chunk %+v", usage)
	}
	ts.settle()
}

func chatUser(s string) []chat.Message { return []chat.Message{{Role: "user", Content: s}} }

// TestChatN: n choices with a seed differ from each other and repeat.
func TestChatN(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	p := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("Tell me"), MaxTokens: openai.Int(6),
		N: openai.Int(3), Seed: openai.Int(7), Temperature: openai.Float(1)}
	a, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Choices) != 3 || len(b.Choices) != 3 {
		t.Fatalf("%d and %d choices", len(a.Choices), len(b.Choices))
	}
	for i := range a.Choices {
		if a.Choices[i].Index != int64(i) || a.Choices[i].Message.Content != b.Choices[i].Message.Content {
			t.Errorf("choice %d: %q vs %q (index %d)", i, a.Choices[i].Message.Content, b.Choices[i].Message.Content, a.Choices[i].Index)
		}
	}
	if a.Choices[0].Message.Content == a.Choices[1].Message.Content && a.Choices[1].Message.Content == a.Choices[2].Message.Content {
		t.Errorf("three seeded samples are equal: %q", a.Choices[0].Message.Content)
	}
	if a.Usage.CompletionTokens != 18 {
		t.Errorf("usage %+v", a.Usage)
	}
	ts.settle()
}

func TestChatLogprobs(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "tiny", Messages: user("Hi"), MaxTokens: openai.Int(5), Temperature: openai.Float(0),
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3),
	})
	if err != nil {
		t.Fatal(err)
	}
	lp := resp.Choices[0].Logprobs.Content
	if len(lp) != int(resp.Usage.CompletionTokens) || len(lp) == 0 {
		t.Fatalf("%d logprobs for %d tokens", len(lp), resp.Usage.CompletionTokens)
	}
	var joined []byte
	for i, e := range lp {
		if len(e.TopLogprobs) != 3 || e.Logprob > 0 {
			t.Fatalf("entry %d: %+v", i, e)
		}
		for k := 1; k < 3; k++ {
			if e.TopLogprobs[k].Logprob > e.TopLogprobs[k-1].Logprob {
				t.Fatalf("entry %d: top_logprobs not sorted", i)
			}
		}
		// Greedy: the drawn token is the most likely one.
		if e.Token != e.TopLogprobs[0].Token || e.Logprob != e.TopLogprobs[0].Logprob {
			t.Errorf("entry %d: drew %q (%g), top is %q (%g)", i, e.Token, e.Logprob, e.TopLogprobs[0].Token, e.TopLogprobs[0].Logprob)
		}
		if !strings.ContainsRune(e.Token, '\uFFFD') && string(int64sToBytes(e.Bytes)) != e.Token {
			t.Errorf("entry %d: bytes %v are not %q", i, e.Bytes, e.Token)
		}
		joined = append(joined, e.Token...)
	}
	if !strings.HasPrefix(string(joined), resp.Choices[0].Message.Content) && resp.Choices[0].Message.Content != string(joined) {
		t.Logf("tokens joined %q, content %q", joined, resp.Choices[0].Message.Content)
	}
	// Streaming carries the logprobs chunk by chunk.
	st := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "tiny", Messages: user("Hi"), MaxTokens: openai.Int(5), Temperature: openai.Float(0),
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(3),
	})
	n := 0
	for st.Next() {
		for _, ch := range st.Current().Choices {
			for _, e := range ch.Logprobs.Content {
				if e.Token != lp[n].Token || e.Logprob != lp[n].Logprob {
					t.Fatalf("stream logprob %d: %+v, want %+v", n, e, lp[n])
				}
				n++
			}
		}
	}
	if st.Err() != nil || n != len(lp) {
		t.Fatalf("stream: %v, %d logprobs", st.Err(), n)
	}
	st.Close()
	ts.settle()
}

func int64sToBytes(v []int64) []byte {
	b := make([]byte, len(v))
	for i, x := range v {
		b[i] = byte(x)
	}
	return b
}

func TestCompletions(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	resp, err := c.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"The cat", "A dog"}},
		MaxTokens: openai.Int(6), Temperature: openai.Float(0), Logprobs: openai.Int(2), N: openai.Int(2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 4 {
		t.Fatalf("%d choices", len(resp.Choices))
	}
	want, err := ts.gen().(*engine.LLM).Generate(ctx, []string{"The cat", "A dog"}, sampler.Params{MaxTokens: 6, Logprobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range resp.Choices {
		w := want[i/2]
		if ch.Index != int64(i) || ch.Text != w.Text || string(ch.FinishReason) != w.FinishReason {
			t.Errorf("choice %d: %q %s, want %q %s", i, ch.Text, ch.FinishReason, w.Text, w.FinishReason)
		}
		lp := ch.Logprobs
		if len(lp.Tokens) != len(w.Tokens) || len(lp.TokenLogprobs) != len(w.Tokens) || len(lp.TopLogprobs) != len(w.Tokens) || len(lp.TextOffset) != len(w.Tokens) {
			t.Fatalf("choice %d logprobs %+v", i, lp)
		}
		off := int64(0)
		for k := range lp.Tokens {
			if lp.TokenLogprobs[k] != w.Logprobs[k].Logprob || len(lp.TopLogprobs[k]) == 0 || lp.TextOffset[k] != off {
				t.Errorf("choice %d token %d: %v %v %v", i, k, lp.TokenLogprobs[k], lp.TopLogprobs[k], lp.TextOffset[k])
			}
			off += int64(len(lp.Tokens[k]))
		}
	}
	if resp.Usage.CompletionTokens != 24 {
		t.Errorf("usage %+v", resp.Usage)
	}
	// A token-id prompt with a stop string, streamed.
	ids, _ := ts.gen().Tokenizer().Encode("The cat", true)
	ids64 := make([]int64, len(ids))
	for i, id := range ids {
		ids64[i] = int64(id)
	}
	st := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{
		Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: ids64},
		MaxTokens: openai.Int(6), Temperature: openai.Float(0),
	})
	var text strings.Builder
	for st.Next() {
		for _, ch := range st.Current().Choices {
			text.WriteString(ch.Text)
		}
	}
	if st.Err() != nil || text.String() != want[0].Text {
		t.Fatalf("token prompt stream: %v %q, want %q", st.Err(), text.String(), want[0].Text)
	}
	st.Close()
	ts.settle()
}

// TestStop: a stop string cuts the answer and is left out.
func TestStop(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	ctx := context.Background()
	full, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")}, MaxTokens: openai.Int(12), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	text := full.Choices[0].Text
	if len(text) < 4 {
		t.Fatalf("too short to cut: %q", text)
	}
	// Stop at a substring from the middle of the greedy answer.
	r := []rune(text)
	stop := string(r[len(r)/2 : len(r)/2+1])
	cut := text[:strings.Index(text, stop)]
	got, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon")}, MaxTokens: openai.Int(12), Temperature: openai.Float(0),
		Stop: openai.CompletionNewParamsStopUnion{OfStringArray: []string{stop, "never-there"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Text != cut || got.Choices[0].FinishReason != "stop" {
		t.Fatalf("stop %q: %q %s, want %q stop", stop, got.Choices[0].Text, got.Choices[0].FinishReason, cut)
	}
	ts.settle()
}

func TestModelsHealthQuant(t *testing.T) {
	ts := newTestServer(t, Config{Models: []Spec{
		{Name: "tiny", Path: "../testdata/models/qwen2-tiny-Q4_1.gguf"},
		{Name: "tiny", Path: "../testdata/models/qwen2-tiny-F16.gguf"},
	}})
	ts.waitLoaded()
	code, _, b := ts.do("GET", "/health", "", "")
	if code != 200 || !strings.Contains(string(b), `"ok"`) {
		t.Fatalf("health %d %s", code, b)
	}
	c := ts.client()
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "tiny,tiny:Q4_1,tiny:F16" {
		t.Fatalf("models %v", ids)
	}
	for _, name := range []string{"tiny:Q4_1", "tiny:F16", "tiny:f16", "tiny"} {
		m, _, e := ts.srv.lookup(name)
		if e != nil {
			t.Fatalf("%s: %v", name, e)
		}
		want := strings.ToUpper(strings.TrimPrefix(name, "tiny:"))
		if name == "tiny" {
			want = "Q4_1" // the first registered
		}
		if m.Quant != want {
			t.Errorf("%s picked %s", name, m.Quant)
		}
	}
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny:Q8_0", Messages: user("x")})
	checkAPIError(t, err, 404, "model")
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny:F16", Messages: user("x"), MaxTokens: openai.Int(2)})
	if err != nil || resp.Model != "tiny:F16" {
		t.Fatalf("%v %+v", err, resp)
	}
}

func TestQuantFromName(t *testing.T) {
	for name, want := range map[string]string{
		"SmolLM2-135M-Instruct.Q4_1.gguf": "Q4_1", "x-q4_k_m.gguf": "Q4_K_M", "m.F16.gguf": "F16",
		"m-BF16.gguf": "BF16", "model.gguf": "", "dir/qwen2-tiny": "", "IQ2_XS.gguf": "",
	} {
		if got := quantFromName(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// checkAPIError checks err is the client's *openai.Error with status
// and param (param "" means any).
func checkAPIError(t testing.TB, err error, status int, param string) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if ae.StatusCode != status || (param != "" && ae.Param != param) || ae.Message == "" || ae.Type == "" {
		t.Fatalf("got %d param %q type %q: %s; want %d param %q", ae.StatusCode, ae.Param, ae.Type, ae.Message, status, param)
	}
	return ae
}

// blockingOpen opens the tiny model after release is closed.
func blockingOpen(release <-chan struct{}) func(Spec) (*Model, error) {
	return func(s Spec) (*Model, error) {
		<-release
		return OpenModel(context.Background(), s.Path, tinyOptions())
	}
}

func TestErrorStatuses(t *testing.T) {
	release := make(chan struct{})
	opts := tinyOptions()
	opts.MaxPending = 1
	var busy atomic.Bool
	ts := newTestServer(t, Config{APIKey: "sekret", Open: func(s Spec) (*Model, error) {
		<-release
		m, err := OpenModel(context.Background(), s.Path, opts)
		if err == nil {
			m.Gen = fullQueueGen{m.Gen, &busy}
		}
		return m, err
	}})
	good := ts.client(option.WithAPIKey("sekret"))
	ctx := context.Background()
	msg := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("hi"), MaxTokens: openai.Int(2)}

	// 503 while loading, with Retry-After; /health too.
	_, err := good.Chat.Completions.New(ctx, msg)
	ae := checkAPIError(t, err, 503, "")
	if ae.Response.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if code, _, b := ts.do("GET", "/health", "", ""); code != 503 {
		t.Fatalf("health while loading: %d %s", code, b)
	}
	close(release)
	ts.waitLoaded()

	// 401: missing or wrong key (the client sends "Bearer none").
	nokey := ts.client()
	_, err = nokey.Chat.Completions.New(ctx, msg)
	checkAPIError(t, err, 401, "")
	code, _, b := ts.do("POST", "/v1/chat/completions", "application/json", `{}`)
	if code != 401 {
		t.Fatalf("no key: %d", code)
	}
	errorBody(t, b)
	// 404 unknown model, 400 bad temperature, 405 wrong method.
	_, err = good.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: user("hi")})
	checkAPIError(t, err, 404, "model")
	_, err = good.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: user("hi"), Temperature: openai.Float(5)})
	checkAPIError(t, err, 400, "temperature")
	_, err = good.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "tiny", Messages: nil})
	checkAPIError(t, err, 400, "messages")
	code, hdr, b := ts.do("GET", "/v1/chat/completions", "", "", "Authorization", "Bearer sekret")
	if code != 405 || hdr.Get("Allow") != "POST" {
		t.Fatalf("GET chat: %d %v", code, hdr)
	}
	errorBody(t, b)

	// 429: the engine's queue is full (engine.ErrQueueFull; the engine's
	// tests hold MaxPending to it). A long stream on the tiny model can
	// finish before a second request arrives, so the queue is shown full
	// by the Generator rather than by timing.
	busy.Store(true)
	_, err = good.Chat.Completions.New(ctx, msg, option.WithMaxRetries(0))
	busy.Store(false)
	ae = checkAPIError(t, err, 429, "")
	if ae.Response.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	ts.settle()
	// Afterwards the server still answers.
	if _, err := good.Chat.Completions.New(ctx, msg); err != nil {
		t.Fatal(err)
	}
	ts.settle()
}

// fullQueueGen is a Generator whose queue is full while busy is set.
type fullQueueGen struct {
	Generator
	busy *atomic.Bool
}

func (g fullQueueGen) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	if g.busy.Load() {
		return func(yield func(engine.Delta, error) bool) { yield(engine.Delta{}, engine.ErrQueueFull) }
	}
	return g.Generator.StreamChat(ctx, req, p, opts...)
}

// TestDisconnect: a streaming client that goes away mid-answer frees its
// request's cells.
func TestDisconnect(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := `{"model":"tiny","messages":[{"role":"user","content":"talk"}],"prompt":"talk","max_tokens":900,"ignore_eos":true,"stream":true,"n":2}`
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.hs.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: ts.tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		rd := bufio.NewReader(resp.Body)
		for range 3 { // a few chunks arrive
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(line, "[DONE]") {
				t.Fatal("finished before the disconnect")
			}
		}
		// Stats are published after the step that sent the chunks: wait
		// (bounded) until they show this request's cells.
		for deadline := time.Now().Add(5 * time.Second); ts.gen().Stats().KVUsed == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no cells in use mid-answer: %+v", path, ts.gen().Stats())
			}
		}
		cancel()
		resp.Body.Close()
		ts.settle()
		if st := ts.gen().Stats(); st.Finished["abort"] == 0 {
			t.Fatalf("%s: no abort counted: %+v", path, st)
		}
	}
}

// TestShutdownDrains: http.Server.Shutdown lets a running stream finish.
func TestShutdownDrains(t *testing.T) {
	srv, err := New(Config{Models: []Spec{{Name: "tiny", Path: tinyDir}}, Engine: tinyOptions()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Start()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(hs.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"tiny","prompt":"x","max_tokens":200,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		done <- hs.Config.Shutdown(ctx)
	}()
	rest, err := io.ReadAll(rd)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("stream cut by shutdown: %v, ends %q", err, tail(string(rest)))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	hs.Close()
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

func TestMetrics(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	for range 2 {
		if _, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "tiny", Messages: user("hi"), MaxTokens: openai.Int(4)},
			option.WithJSONSet("ignore_eos", true)); err != nil { // 4 tokens each, finish_reason "length"
			t.Fatal(err)
		}
	}
	ts.settle()
	st := ts.gen().Stats()
	code, _, b := ts.do("GET", "/metrics", "", "")
	if code != 200 {
		t.Fatal(code)
	}
	body := string(b)
	for _, want := range []string{
		`vllm:num_requests_running{model_name="tiny"} 0`,
		`vllm:num_requests_waiting{model_name="tiny"} 0`,
		`vllm:kv_cache_usage_perc{model_name="tiny"} 0`,
		`vllm:prompt_tokens_total{model_name="tiny"} ` + itoa(st.PromptTokens),
		`vllm:generation_tokens_total{model_name="tiny"} ` + itoa(st.GenerationTokens),
		`vllm:num_preemptions_total{model_name="tiny"} 0`,
		`vllm:prefix_cache_queries_total{model_name="tiny"}`,
		`vllm:prefix_cache_hits_total{model_name="tiny"}`,
		`vllm:request_success_total{finished_reason="length",model_name="tiny"} 2`,
		`vllm:time_to_first_token_seconds_count{model_name="tiny"} 2`,
		`vllm:time_per_output_token_seconds_count{model_name="tiny"} 2`,
		`vllm:inter_token_latency_seconds_count{model_name="tiny"} 6`,
		`vllm:e2e_request_latency_seconds_count{model_name="tiny"} 2`,
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want+" ") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if st.GenerationTokens != 8 {
		t.Errorf("generation tokens %d", st.GenerationTokens)
	}
}

func itoa(v uint64) string { b, _ := json.Marshal(v); return string(b) }
