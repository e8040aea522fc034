package browser

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/cpu" // the tests run on "cpu"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/server"
)

var update = flag.Bool("update", false, "rewrite the screenshots in docs/screenshots")

const (
	tinyModel = "../../testdata/models/qwen2-tiny-Q4_1.gguf"
	shotDir   = "../../docs/screenshots"
)

// markdownAnswer is the scripted model's answer: Markdown of every kind
// the page renders, and HTML that must show as text.
const markdownAnswer = "## Rendering check\n\n" +
	"Model output is **untrusted**: <img src=x onerror=\"window.__xss=1\"> and " +
	"<script>window.__xss=2</script> must show as text.\n\n" +
	"| Quant | Bits | Note |\n|:--|--:|---|\n| Q4_1 | 4.5 | `small` |\n| Q8_0 | 8.5 | *close to F16* |\n\n" +
	"1. first\n2. second\n   - nested <b>bold?</b>\n\n" +
	"```go\nfmt.Println(\"<script>alert(1)</script>\")\n```\n\n" +
	"[a link](javascript:alert(1)) and [a safe one](https://example.com)."

// testServer serves the tiny model twice over (a slow file for long
// answers) and three scripted models on loopback.
type testServer struct {
	hs   *httptest.Server
	srv  *server.Server
	base string

	mu     sync.Mutex
	bodies []string // of each POST /v1/chat/completions, in order
	// unreachable makes /v1/models end the connection unanswered, as a
	// server that went away would.
	unreachable atomic.Bool
}

// chatBodies are the bodies of the chat requests so far.
func (ts *testServer) chatBodies() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.bodies)
}

func startServer(t *testing.T, apiKey string) *testServer {
	t.Helper()
	var tiny *server.Model // loaded first; the scripted models use its tokenizer
	open := func(sp server.Spec) (*server.Model, error) {
		switch sp.Name {
		case "tiny":
			cpu, err := kernels.Open("cpu", kernels.Options{})
			if err != nil {
				return nil, err
			}
			opts := engine.Options{ContextLen: 256, MaxSeqs: 1, MaxPending: 2,
				Model: []models.Option{models.WithBackend(slowBackend{cpu, 25 * time.Millisecond})}}
			tiny, err = server.OpenModel(context.Background(), sp.Path, opts)
			return tiny, err
		case "script":
			return &server.Model{Gen: &scripted{text: markdownAnswer, tok: tiny.Gen.Tokenizer()}}, nil
		case "broken":
			return &server.Model{Gen: &scripted{text: strings.Repeat("partial answer ", 20), failAfter: 4, tok: tiny.Gen.Tokenizer()}}, nil
		case "think": // a thinking model's answer: reasoning, then the answer
			return &server.Model{Gen: &scripted{text: "<think>Two and two: the secret reasoning.</think>\n\nThe answer is **4**.", tok: tiny.Gen.Tokenizer()}}, nil
		case "hold": // a first token that takes seconds: time to stop before it
			return &server.Model{Gen: &scripted{text: "late answer", delay: 5 * time.Second, tok: tiny.Gen.Tokenizer()}}, nil
		}
		return nil, fmt.Errorf("unknown test model %q", sp.Name)
	}
	srv, err := server.New(server.Config{APIKey: apiKey, Open: open, Models: []server.Spec{
		{Name: "tiny", Path: tinyModel}, {Name: "script"}, {Name: "broken"}, {Name: "hold"}, {Name: "think"}}})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{srv: srv}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" && ts.unreachable.Load() {
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		if r.URL.Path == "/v1/chat/completions" {
			b, _ := io.ReadAll(r.Body)
			ts.mu.Lock()
			ts.bodies = append(ts.bodies, string(b))
			ts.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	ts.hs, ts.base = hs, hs.URL
	t.Cleanup(func() { hs.Close(); srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := srv.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return ts
}

// page wraps the browser tab with the test's failure handling.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatal(err)
	}
}

func eval[T any](p page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// waitJS waits until expr is truthy.
func (p page) waitJS(expr string, within time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, within+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(within),
		chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		p.t.Fatalf("waiting for %s: %v", expr, err)
	}
}

// open loads the page and waits for the model list.
func (p page) open(base string) {
	p.t.Helper()
	p.do(chromedp.Navigate(base + "/"))
	p.waitJS(`document.querySelectorAll("#model option").length >= 3`, 20*time.Second)
	// Record each distinct text the streaming answer shows (one per paint).
	eval[bool](p, `(() => {
		window.__paints = [];
		new MutationObserver(() => {
			const n = document.querySelector(".msg.streaming .content");
			if (n && n.textContent && window.__paints.at(-1) !== n.textContent) window.__paints.push(n.textContent);
		}).observe(document.getElementById("messages"), {childList: true, subtree: true, characterData: true});
		return true;
	})()`)
}

// setting sets a conversation setting input as a user would.
func (p page) setting(id, value string) {
	p.t.Helper()
	eval[bool](p, fmt.Sprintf(`(() => { const e = document.getElementById(%s); e.value = %s;
		e.dispatchEvent(new Event("change")); return true; })()`, js(id), js(value)))
}

// send types text into the message box and presses Enter.
func (p page) send(text string) {
	p.t.Helper()
	p.do(chromedp.Focus(chromedp.CSS("#input")), chromedp.SendKeys(chromedp.CSS("#input"), text), press("Enter", false))
}

// settled waits until no answer is streaming.
func (p page) settled() {
	p.t.Helper()
	p.settledWithin(30 * time.Second)
}

func (p page) settledWithin(d time.Duration) {
	p.t.Helper()
	p.waitJS(`!document.querySelector(".msg.streaming") && !document.getElementById("send").hidden`, d)
}

// messages are the role and text of each message shown.
func (p page) messages() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll("#messages .msg")].map(m => m.dataset.role + ": " + m.querySelector(".content").textContent)`)
}

func (p page) shot(name string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatal(err)
	}
	if len(png) < 1000 {
		p.t.Fatalf("screenshot %s: %d bytes", name, len(png))
	}
	if *update {
		if err := os.WriteFile(filepath.Join(shotDir, name), png, 0o644); err != nil {
			p.t.Fatal(err)
		}
	}
}

var metaRe = regexp.MustCompile(`^(\d+) tokens · [\d.]+ tok/s · TTFT \d+ ms · prompt (\d+) tokens, (\d+) cached$`)

func TestChatPage(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, "")
	p := page{t, ctx}
	p.do(chromedp.EmulateViewport(1280, 800), colorScheme("light"))
	p.open(ts.base)

	models := eval[[]string](p, `[...document.querySelectorAll("#model option")].map(o => o.value)`)
	for _, want := range []string{"tiny", "script", "broken"} {
		if !slices.Contains(models, want) {
			t.Errorf("model picker %q lacks %q", models, want)
		}
	}

	// Two conversations, each with a streamed answer.
	answers := map[string]string{}
	for _, name := range []string{"first", "second"} {
		p.do(chromedp.Click(chromedp.CSS("#new-chat")))
		p.setting("model", "tiny")
		p.setting("max_tokens", "24")
		// Seeded: an unseeded draw may meet the tiny model's EOS before
		// max_tokens, and the meta line is checked for 24 tokens.
		p.setting("seed", "1")
		eval[bool](p, `(window.__paints = [], true)`)
		p.send("hello from the " + name + " chat")
		p.settled()
		paints := eval[[]string](p, `window.__paints`)
		final := eval[string](p, `document.querySelector('#messages .msg[data-role="assistant"]:last-of-type .content').textContent`)
		if len(paints) < 2 || paints[0] == final || !strings.HasPrefix(final, paints[0]) {
			t.Errorf("%s chat: the answer was not painted incrementally: %d paints %q, final %q", name, len(paints), paints, final)
		}
		meta := eval[string](p, `document.querySelector('#messages .msg[data-role="assistant"] .meta').textContent`)
		if m := metaRe.FindStringSubmatch(meta); m == nil || m[1] != "24" {
			t.Errorf("%s chat: meta line %q, want 24 tokens, tok/s, TTFT and prompt tokens", name, meta)
		}
		answers[name] = final
	}
	if n := eval[int](p, `document.querySelectorAll("#conv-list li").length`); n != 2 {
		t.Fatalf("%d conversations listed, want 2", n)
	}

	// Switch, reload, switch: each history is intact.
	openChat := func(title string) {
		t.Helper()
		eval[bool](p, fmt.Sprintf(`(() => { const b = [...document.querySelectorAll("#conv-list .conv-open")].find(b => b.textContent === %s);
			if (!b) throw new Error("no conversation " + %s); b.click(); return true; })()`, js(title), js(title)))
	}
	check := func(name string) {
		t.Helper()
		got := p.messages()
		want := []string{"user: hello from the " + name + " chat", "assistant: " + answers[name]}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s chat shows %q, want %q", name, got, want)
		}
	}
	openChat("hello from the first chat")
	check("first")
	p.do(chromedp.Reload())
	p.open(ts.base)
	check("first") // the current conversation is kept too
	openChat("hello from the second chat")
	check("second")
	openChat("hello from the first chat")
	check("first")

	// Rename.
	p.do(chromedp.Focus(chromedp.CSS("#conv-list li.current .conv-open")), // a row's actions show on focus
		chromedp.Click(chromedp.CSS("#conv-list li.current .conv-rename")))
	p.do(chromedp.SendKeys(chromedp.CSS("#conv-list li input"), "Renamed chat"), press("Enter", false))
	if got := eval[string](p, `document.getElementById("conv-title").textContent`); got != "Renamed chat" {
		t.Errorf("after rename the title is %q", got)
	}

	// Shift+Enter is a new line, not a send.
	p.do(chromedp.Focus(chromedp.CSS("#input")), chromedp.SendKeys(chromedp.CSS("#input"), "line one"),
		press("Enter", true), chromedp.SendKeys(chromedp.CSS("#input"), "line two"))
	if v := eval[string](p, `document.getElementById("input").value`); v != "line one\nline two" {
		t.Errorf("after Shift+Enter the message box holds %q", v)
	}
	if n := len(p.messages()); n != 2 {
		t.Errorf("Shift+Enter sent a message: %d messages", n)
	}
	p.do(press("Enter", false))
	p.settled()

	// A system prompt long enough to span cache blocks, then edit the first
	// message: the later turns are replaced. Unseeded again, so that the
	// regenerated answer is drawn anew, not the inference cache's.
	p.setting("seed", "")
	p.setting("system", strings.Repeat("You are a terse assistant who answers in one short line. ", 2))
	p.do(chromedp.Click(chromedp.CSS(`#messages .msg[data-index="0"] .edit`)))
	eval[bool](p, `(() => { const ta = document.querySelector("#messages textarea.edit-box"); ta.value = "an edited first message"; return true; })()`)
	p.do(chromedp.Click(chromedp.CSS("#messages .save-edit")))
	p.settled()
	got := p.messages()
	if len(got) != 2 || got[0] != "user: an edited first message" || !strings.HasPrefix(got[1], "assistant: ") {
		t.Errorf("after edit and regenerate: %q, want the edited message and one answer", got)
	}
	// Regenerate the last answer: the prompt is the same, so the server's
	// prefix cache serves its beginning.
	p.do(chromedp.Click(chromedp.CSS("#messages .regenerate")))
	p.settled()
	meta := eval[string](p, `document.querySelector('#messages .msg[data-role="assistant"] .meta').textContent`)
	if m := metaRe.FindStringSubmatch(meta); m == nil || m[3] == "0" {
		t.Errorf("regenerated answer's meta %q: want cached prompt tokens > 0", meta)
	} else {
		t.Logf("regenerate: %s", meta)
	}

	// Stop a long answer with Esc: the server frees the request.
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "tiny")
	p.setting("max_tokens", "200")
	p.send("a long answer please")
	p.waitJS(`(document.querySelector(".msg.streaming .content")?.textContent || "").length > 0`, 10*time.Second)
	waitRunning(t, ts.base, 1, 5*time.Second)
	// The whole answer takes 200 passes of 25ms (5s); stopped, it ends at once.
	p.do(press("Escape", false))
	p.settledWithin(2 * time.Second)
	waitRunning(t, ts.base, 0, 2*time.Second)
	if meta := eval[string](p, `[...document.querySelectorAll('#messages .msg[data-role="assistant"] .meta')].at(-1).textContent`); !strings.HasPrefix(meta, "stopped") {
		t.Errorf("stopped answer's meta %q, want it to say stopped", meta)
	}

	// 429: the tiny model runs one request and queues one more (MaxSeqs 1,
	// MaxPending 2); two long requests from here fill it.
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "tiny")
	busy, stopBusy := context.WithCancel(context.Background())
	for range 2 {
		go func() {
			body := `{"model":"tiny","stream":true,"max_tokens":150,"ignore_eos":true,"messages":[{"role":"user","content":"hold"}]}`
			req, _ := http.NewRequestWithContext(busy, "POST", ts.base+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				bufio.NewReader(resp.Body).WriteTo(discard{})
				resp.Body.Close()
			}
		}()
	}
	waitRunning(t, ts.base, 1, 5*time.Second)
	time.Sleep(100 * time.Millisecond) // the second is queued
	p.send("are you busy?")
	p.settled()
	errText := eval[string](p, `document.querySelector("#messages .msg.error")?.textContent || ""`)
	stopBusy()
	if !strings.Contains(errText, "Error 429") || !strings.Contains(errText, "retry after 1 s") {
		t.Errorf("on a 429 the page shows %q, want the status and Retry-After", errText)
	}
	waitRunning(t, ts.base, 0, 5*time.Second)

	// An error event mid-stream shows, and the partial answer stays.
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "broken")
	p.send("fail midway")
	p.settled()
	if got := p.messages(); len(got) != 3 || !strings.HasPrefix(got[1], "assistant: partial") || !strings.Contains(got[2], "device was lost") {
		t.Errorf("a mid-stream error shows as %q", got)
	}

	// Untrusted output renders as text; Markdown renders as elements.
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "script")
	p.send("Show me a table and some code.")
	p.settled()
	type rendered struct {
		XSS                               any
		Imgs, Scripts, Tables, Codes, Lis int
		Text, Href                        string
	}
	r := eval[rendered](p, `(() => { const c = [...document.querySelectorAll('#messages .msg[data-role="assistant"] .content')].at(-1);
		return {XSS: window.__xss ?? null, Imgs: c.querySelectorAll("img").length, Scripts: c.querySelectorAll("script").length,
			Tables: c.querySelectorAll("table").length, Codes: c.querySelectorAll(".code button.copy").length,
			Lis: c.querySelectorAll("li").length, Text: c.textContent,
			Href: [...c.querySelectorAll("a")].map(a => a.getAttribute("href")).join(" ")}; })()`)
	if r.XSS != nil || r.Imgs != 0 || r.Scripts != 0 {
		t.Errorf("model HTML was interpreted: __xss=%v, %d img, %d script", r.XSS, r.Imgs, r.Scripts)
	}
	for _, s := range []string{`<img src=x onerror="window.__xss=1">`, `<script>window.__xss=2</script>`, `<b>bold?</b>`, `fmt.Println("<script>alert(1)</script>")`} {
		if !strings.Contains(r.Text, s) {
			t.Errorf("the answer does not show %q as text", s)
		}
	}
	if r.Tables != 1 || r.Codes != 1 || r.Lis != 3 || r.Href != "https://example.com" {
		t.Errorf("Markdown rendered as %d tables, %d code blocks with copy, %d list items, links %q", r.Tables, r.Codes, r.Lis, r.Href)
	}

	// Every control has a name a screen reader can read.
	if unnamed := eval[[]string](p, `[...document.querySelectorAll("button, input, select, textarea")].filter(e =>
		e.type !== "file" && !(e.labels && e.labels.length) && !e.getAttribute("aria-label") && !e.textContent.trim()).map(e => e.outerHTML)`); len(unnamed) > 0 {
		t.Errorf("controls without an accessible name: %q", unnamed)
	}

	// Screenshots: desktop and phone width, light and dark.
	for _, v := range []struct {
		name   string
		w, h   int64
		scheme string
	}{{"desktop-light.png", 1280, 800, "light"}, {"desktop-dark.png", 1280, 800, "dark"},
		{"phone-light.png", 390, 844, "light"}, {"phone-dark.png", 390, 844, "dark"}} {
		p.do(chromedp.EmulateViewport(v.w, v.h), colorScheme(v.scheme))
		p.waitJS(`document.getAnimations().length === 0`, 5*time.Second) // the sidebar slides away
		if v.w < 720 {
			if x := eval[float64](p, `document.getElementById("sidebar").getBoundingClientRect().right`); x > 0 {
				t.Errorf("%s: the conversation list covers the chat (its right edge at %vpx)", v.name, x)
			}
		}
		bg := eval[string](p, `getComputedStyle(document.body).backgroundColor`)
		if dark := bg == "rgb(23, 25, 29)"; dark != (v.scheme == "dark") {
			t.Errorf("%s: background %s", v.name, bg)
		}
		if over := eval[bool](p, `document.documentElement.scrollWidth > window.innerWidth`); over {
			t.Errorf("%s: the page is wider than the screen", v.name)
		}
		p.shot(v.name)
	}
	p.do(chromedp.EmulateViewport(1280, 800), colorScheme("light"))

	// The server goes away mid-answer: the page says so.
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "tiny")
	p.setting("max_tokens", "200")
	p.send("and now the server stops")
	p.waitJS(`(document.querySelector(".msg.streaming .content")?.textContent || "").length > 0`, 10*time.Second)
	ts.hs.CloseClientConnections()
	p.settled()
	if got := p.messages(); len(got) != 3 || !strings.Contains(got[2], "connection to the server was lost") {
		t.Errorf("a dropped connection shows as %q", got)
	}
	waitRunning(t, ts.base, 0, 5*time.Second)

	// Delete asks once more, then deletes.
	before := eval[int](p, `document.querySelectorAll("#conv-list li").length`)
	p.do(chromedp.Focus(chromedp.CSS("#conv-list li.current .conv-open")),
		chromedp.Click(chromedp.CSS("#conv-list li.current .conv-delete")), chromedp.Click(chromedp.CSS("#conv-list li.current .conv-delete")))
	if after := eval[int](p, `document.querySelectorAll("#conv-list li").length`); after != before-1 {
		t.Errorf("delete: %d conversations, then %d", before, after)
	}
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// TestAPIKey: with --api-key the page asks for the key once, keeps it in
// localStorage, and works with it; the API still refuses without it.
func TestAPIKey(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, "sekret")
	p := page{t, ctx}
	p.do(chromedp.Navigate(ts.base + "/"))
	p.waitJS(`document.getElementById("key-dialog").open`, 10*time.Second)
	p.do(chromedp.SendKeys(chromedp.CSS("#key-input"), "sekret"), press("Enter", false))
	p.waitJS(`document.querySelectorAll("#model option").length >= 3`, 10*time.Second)
	if k := eval[string](p, `localStorage.getItem("vkllm.apiKey")`); k != "sekret" {
		t.Errorf("stored key %q", k)
	}
	p.setting("model", "script")
	p.send("hello")
	p.settled()
	if got := p.messages(); len(got) != 2 || !strings.Contains(got[1], "Rendering check") {
		t.Errorf("with the key the chat shows %q", got)
	}
	// After a reload the key is not asked again.
	p.open(ts.base)
	if eval[bool](p, `document.getElementById("key-dialog").open`) {
		t.Error("the page asked for the key again after a reload")
	}
	resp, err := http.Get(ts.base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/models without the key: %d, want 401", resp.StatusCode)
	}
}

// TestImportExport: an export imported again adds the same conversations
// under new ids; a file that is not an export is refused with a message.
func TestImportExport(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, "")
	p := page{t, ctx}
	p.open(ts.base)
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", "script")
	p.send("keep me")
	p.settled()
	type result struct {
		N     int
		IDs   int
		Texts []string
		Err   string
	}
	r := eval[result](p, `(async () => {
		const app = await import("/web/app.js");
		const exported = JSON.stringify({version: 1, conversations: JSON.parse(localStorage.getItem("vkllm.chat.v1")).conversations});
		app.importJSON(exported);
		const s = JSON.parse(localStorage.getItem("vkllm.chat.v1"));
		let err = "";
		try { app.importJSON('{"nothing": 1}'); } catch (e) { err = e.message; }
		return {N: s.conversations.length, IDs: new Set(s.conversations.map(c => c.id)).size,
			Texts: s.conversations.map(c => c.messages.map(m => m.role + ": " + m.content.slice(0, 12)).join(" | ")), Err: err};
	})()`)
	if r.N != 2 || r.IDs != 2 || r.Texts[0] != r.Texts[1] || !strings.HasPrefix(r.Texts[0], "user: keep me | assistant: ## Rendering") {
		t.Errorf("after importing the export: %+v", r)
	}
	if r.Err != "no conversations array" {
		t.Errorf("importing a bad file: error %q", r.Err)
	}
	if n := eval[int](p, `document.querySelectorAll("#conv-list li").length`); n != 2 {
		t.Errorf("the list shows %d conversations, want 2", n)
	}
}
