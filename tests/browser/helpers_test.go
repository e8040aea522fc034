package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// chromiumPath is Debian's chromium, or skips the test naming how to get it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("VKLLM_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Skip("chromium is not installed: run `sudo apt-get install chromium` (or `bash tools/install-deps.sh`), or set VKLLM_CHROMIUM")
	return ""
}

// newBrowser starts a headless chromium for the test's lifetime.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// slowBackend delays each forward pass (GetRows is the token embedding,
// once per pass) so that an answer of a few hundred tokens from the tiny
// model runs for seconds, long enough to stop it or drop its connection.
type slowBackend struct {
	kernels.Backend
	delay time.Duration
}

func (b slowBackend) GetRows(dst, table, ids kernels.Tensor) {
	time.Sleep(b.delay)
	b.Backend.GetRows(dst, table, ids)
}

// scripted is a model whose answer is fixed text, streamed a few
// characters at a time after delay: the browser test needs answers a
// random-weights model will not write (Markdown, HTML that must not run).
// When failAfter > 0 the stream ends with an error after that many pieces.
type scripted struct {
	genBase
	text      string
	failAfter int
	delay     time.Duration // before the first piece
	tok       *tokenizer.Tokenizer
}

// genBase is what a fake server.Generator has of the capabilities it
// lacks: no queue bound, no max_model_len, nothing to clear, no
// tokenizing on request nor embeddings (errors.ErrUnsupported).
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

func (s *scripted) StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return s.stream(ctx)
}

func (s *scripted) Stream(ctx context.Context, prompt string, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return s.stream(ctx)
}

func (s *scripted) StreamTokens(ctx context.Context, prompt []int32, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error] {
	return s.stream(ctx)
}

func (s *scripted) stream(ctx context.Context) iter.Seq2[engine.Delta, error] {
	return func(yield func(engine.Delta, error) bool) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.delay):
		}
		text, n := s.text, 0
		for len(text) > 0 {
			k := min(7, len(text))
			n++
			if !yield(engine.Delta{Output: engine.Output{NewTokens: []int32{1}, TextDelta: text[:k]}}, nil) {
				return
			}
			text = text[k:]
			if s.failAfter > 0 && n == s.failAfter {
				yield(engine.Delta{}, fmt.Errorf("scripted: the device was lost"))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(15 * time.Millisecond):
			}
		}
		yield(engine.Delta{Output: engine.Output{Finished: true, FinishReason: "stop",
			Usage: engine.Usage{PromptTokens: 10, CompletionTokens: n}}}, nil)
	}
}

func (s *scripted) Stats() engine.Stats             { return engine.Stats{} }
func (s *scripted) Tokenizer() *tokenizer.Tokenizer { return s.tok }
func (s *scripted) Close() error                    { return nil }

// running is the sum of vllm:num_requests_running over the models.
func running(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^vllm:num_requests_running\{[^}]*\} (\S+)$`).FindAllStringSubmatch(string(b), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		n += int(v)
	}
	return n
}

// waitRunning waits until running(base) is want.
func waitRunning(t *testing.T, base string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := running(t, base)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("vllm:num_requests_running = %d after %v, want %d", got, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// colorScheme emulates prefers-color-scheme ("light" or "dark").
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}

// js quotes s as a JavaScript string literal.
func js(s string) string { return strconv.Quote(s) }

// contains reports whether any of list contains sub.
func contains(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// press presses Enter or Escape as a real keyboard does: one keyDown that
// carries the key's text (so that preventDefault on keydown keeps the
// text out, as it does for a person typing), then keyUp. chromedp's
// KeyEvent sends the text as a separate char event, which a page cannot
// cancel.
func press(key string, shift bool) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key, Code: key}
		switch key {
		case "Enter":
			down.WindowsVirtualKeyCode, down.NativeVirtualKeyCode, down.Text = 13, 13, "\r"
		case "Escape":
			down.WindowsVirtualKeyCode, down.NativeVirtualKeyCode = 27, 27
		}
		if shift {
			down.Modifiers = int64(chromedp.ModifierShift)
		}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text = input.DispatchKeyEventTypeKeyUp, ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}
