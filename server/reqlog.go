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
	promptTokens, cached int    // of a request without a stream (embeddings)
	choices              map[int]*choiceCount
	ttft                 time.Duration // 0: no token drawn
	reasons              []string      // finish reasons, one per choice
	start                time.Time     // the request's arrival
	// charge, when set (a key with limits), is told each token as it is
	// sent; charged is how many it was told.
	charge  func(tokens int)
	charged int
}

// choiceCount is what one choice of a stream has cost so far: its
// latest Usage (the engine's deltas carry the running counts) and the
// tokens it sent, for a Generator whose deltas carry no Usage until the
// last.
type choiceCount struct {
	lead  bool // choice 0 of its stream: the prompt is counted here
	usage engine.Usage
	sent  int
}

func (c *choiceCount) completion() int { return max(c.usage.CompletionTokens, c.sent) }

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

// observe notes one delta of choice i of the request, choice d.Index
// of its stream (whose choice 0 counts the prompt), at time now, and
// charges the tokens it adds to the key (as they are sent, so that a
// request that ends early, by a disconnect or an abort, pays for what
// it got).
func (i *reqInfo) observe(idx int, d engine.Delta, now time.Time) {
	i.mu.Lock()
	if len(d.NewTokens) > 0 && i.ttft == 0 && !i.start.IsZero() {
		i.ttft = max(now.Sub(i.start), time.Nanosecond)
	}
	if i.choices == nil {
		i.choices = map[int]*choiceCount{}
	}
	c := i.choices[idx]
	if c == nil {
		c = &choiceCount{lead: d.Index == 0}
		i.choices[idx] = c
	}
	c.sent += len(d.NewTokens)
	if d.Usage != (engine.Usage{}) {
		c.usage = d.Usage
	}
	if d.Finished {
		i.reasons = append(i.reasons, d.FinishReason)
	}
	charge, owed := i.owed()
	i.mu.Unlock()
	if charge != nil && owed > 0 {
		charge(owed)
	}
}

// owed is the charge function and the tokens not yet charged, which it
// counts as charged; i.mu is held.
func (i *reqInfo) owed() (func(int), int) {
	if i.charge == nil {
		return nil, 0
	}
	n := i.count() - i.charged
	i.charged += n
	return i.charge, n
}

// counts are the prompt, cached and completion tokens noted so far;
// i.mu is held.
func (i *reqInfo) counts() (prompt, cached, completion int) {
	prompt, cached = i.promptTokens, i.cached
	for _, c := range i.choices {
		if c.lead {
			prompt += c.usage.PromptTokens
			cached += c.usage.CachedTokens
		}
		completion += c.completion()
	}
	return prompt, cached, completion
}

func (i *reqInfo) count() int {
	p, _, c := i.counts()
	return p + c
}

// uncharged is the tokens noted and not yet charged (and counts them as
// charged): what a request owes its key when it ends.
func (i *reqInfo) uncharged() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	n := i.count() - i.charged
	i.charged += n
	return n
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
	prompt, cached, completion := i.counts()
	a = append(a, slog.String("model", i.model),
		slog.Int("prompt_tokens", prompt), slog.Int("cached_tokens", cached),
		slog.Int("completion_tokens", completion),
		slog.Duration("ttft", i.ttft), slog.String("finish_reason", strings.Join(reasons, ",")))
	if i.prompt != "" {
		a = append(a, slog.String("prompt", i.prompt))
	}
	return a
}
