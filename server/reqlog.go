package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vkllm/vkllm/engine"
)

// MaxRequestIDLen bounds an X-Request-Id the server echoes; a longer one,
// or one with other than printable ASCII, is replaced by a new id.
const MaxRequestIDLen = 128

// reqInfo is what the request log says of one request beyond its method,
// path and status: filled by the wrappers (id, key) and the handlers
// (model, tokens, finish reasons), read when the request has ended.
type reqInfo struct {
	id    string // X-Request-Id, echoed or made
	keyID string // the API key's id, never the key

	mu                   sync.Mutex
	model                string
	prompt               string // only with Config.LogPrompts
	promptTokens, cached int
	completionTokens     int
	ttft                 time.Duration // 0: no token drawn
	reasons              []string      // finish reasons, one per choice
	start                time.Time     // the request's arrival
}

type infoKey struct{}

// infoOf is the request's reqInfo (a blank one outside logged).
func infoOf(ctx context.Context) *reqInfo {
	if i, ok := ctx.Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// requestID is the client's X-Request-Id when it is a sane one (1 to
// MaxRequestIDLen printable ASCII characters), else a new random id.
func requestID(h string) string {
	ok := h != "" && len(h) <= MaxRequestIDLen
	for i := 0; ok && i < len(h); i++ {
		ok = h[i] > ' ' && h[i] < 0x7f
	}
	if ok {
		return h
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (i *reqInfo) setModel(name string) {
	i.mu.Lock()
	i.model = name
	i.mu.Unlock()
}

func (i *reqInfo) setPrompt(text string) {
	i.mu.Lock()
	i.prompt = text
	i.mu.Unlock()
}

// note records the model a request asked for and, with
// Config.LogPrompts, its prompt (the JSON of messages, prompt or input).
func (s *Server) note(r *http.Request, model string, prompt json.RawMessage) {
	i := infoOf(r.Context())
	i.setModel(model)
	if s.cfg.LogPrompts && len(prompt) > 0 {
		i.setPrompt(string(prompt))
	}
}

// addPromptTokens counts the prompt tokens of a request that has no
// stream (embeddings).
func (i *reqInfo) addPromptTokens(n int) {
	i.mu.Lock()
	i.promptTokens += n
	i.mu.Unlock()
}

// observe notes one delta of choice index (of a stream whose choice 0
// counts the prompt) at time now.
func (i *reqInfo) observe(d engine.Delta, now time.Time) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if len(d.NewTokens) > 0 && i.ttft == 0 && !i.start.IsZero() {
		i.ttft = max(now.Sub(i.start), time.Nanosecond)
	}
	if !d.Finished {
		return
	}
	i.reasons = append(i.reasons, d.FinishReason)
	i.completionTokens += d.Usage.CompletionTokens
	if d.Index == 0 {
		i.promptTokens += d.Usage.PromptTokens
		i.cached += d.Usage.CachedTokens
	}
}

// tokens is the prompt and completion tokens noted so far.
func (i *reqInfo) tokens() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.promptTokens + i.completionTokens
}

// attrs are the log attributes of the request's model and tokens; the
// prompt only when one was noted (Config.LogPrompts).
func (i *reqInfo) attrs() []slog.Attr {
	i.mu.Lock()
	defer i.mu.Unlock()
	a := []slog.Attr{slog.String("request_id", i.id)}
	if i.keyID != "" {
		a = append(a, slog.String("key_id", i.keyID))
	}
	if i.model == "" {
		return a
	}
	reasons := slices.Clone(i.reasons)
	a = append(a, slog.String("model", i.model),
		slog.Int("prompt_tokens", i.promptTokens), slog.Int("cached_tokens", i.cached),
		slog.Int("completion_tokens", i.completionTokens),
		slog.Duration("ttft", i.ttft), slog.String("finish_reason", strings.Join(reasons, ",")))
	if i.prompt != "" {
		a = append(a, slog.String("prompt", i.prompt))
	}
	return a
}
