package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// fresh opens the page in a tab with an empty localStorage.
func (p page) fresh(base string) {
	p.t.Helper()
	p.do(chromedp.Navigate(base + "/"))
	eval[bool](p, `(localStorage.clear(), true)`)
	p.open(base)
}

// newChat is a fresh page (fresh) with a new conversation that talks to
// model.
func newChat(t *testing.T, ctx context.Context, base, model string) page {
	t.Helper()
	p := page{t, ctx}
	p.fresh(base)
	p.do(chromedp.Click(chromedp.CSS("#new-chat")))
	p.setting("model", model)
	return p
}

// titles are the conversation titles listed.
func (p page) titles() []string {
	p.t.Helper()
	return eval[[]string](p, `[...document.querySelectorAll("#conv-list .conv-open")].map(b => b.textContent)`)
}

// newTab is a second tab of p's browser.
func newTab(p page) page {
	ctx, cancel := chromedp.NewContext(p.ctx)
	p.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		p.t.Fatalf("open a second tab: %v", err)
	}
	return page{p.t, ctx}
}

// TestPageDefects: each defect of issue 40's first item, one subtest each,
// in one browser and one server.
func TestPageDefects(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, "")
	p := page{t, ctx}
	p.do(chromedp.EmulateViewport(1280, 800), colorScheme("light"))

	// Two tabs: a conversation made in one survives a change in the other,
	// and each tab lists the other's conversations without a reload.
	t.Run("TwoTabs", func(t *testing.T) {
		p := page{t, ctx}
		p.fresh(ts.base)
		q := newTab(p)
		q.do(chromedp.EmulateViewport(1280, 800))
		q.open(ts.base)
		p.do(chromedp.Click(chromedp.CSS("#new-chat")))
		p.setting("model", "script")
		p.send("made in tab one")
		p.settled()
		q.do(chromedp.Click(chromedp.CSS("#new-chat")))
		q.setting("model", "script")
		q.send("made in tab two")
		q.settled()
		// Tab one renames its conversation: tab two's must not vanish. (A
		// script click: tab one is in the background, where focus and the
		// pointer do not go.)
		eval[bool](p, `(document.querySelector("#conv-list li.current .conv-rename").click(), true)`)
		p.do(chromedp.SendKeys(chromedp.CSS("#conv-list li input"), "tab one, renamed"), press("Enter", false))
		want := []string{"tab one, renamed", "made in tab two"}
		p.waitJS(fmt.Sprintf(`(() => { const t = [...document.querySelectorAll("#conv-list .conv-open")].map(b => b.textContent);
			return %s.every(w => t.includes(w)); })()`, mustJSON(want)), 3*time.Second)
		q.waitJS(fmt.Sprintf(`(() => { const t = [...document.querySelectorAll("#conv-list .conv-open")].map(b => b.textContent);
			return %s.every(w => t.includes(w)); })()`, mustJSON(want)), 3*time.Second)
		p.open(ts.base)
		if got := p.titles(); len(got) != 2 || !contains(got, want[0]) || !contains(got, want[1]) {
			t.Errorf("after a reload the list is %q, want %q", got, want)
		}
	})

	// Phone width: the drawer can be closed by its own button, a tap
	// outside it, Esc and "+ New chat".
	t.Run("PhoneDrawer", func(t *testing.T) {
		p := page{t, ctx}
		p.do(chromedp.EmulateViewport(390, 844))
		defer p.do(chromedp.EmulateViewport(1280, 800))
		p.fresh(ts.base)
		isOpen := `document.getElementById("sidebar").getBoundingClientRect().right > 0`
		closed := `document.getElementById("sidebar").getBoundingClientRect().right <= 0 && document.getAnimations().length === 0`
		open := func() {
			t.Helper()
			p.waitJS(closed, 3*time.Second)
			p.do(chromedp.Click(chromedp.CSS("#toggle-sidebar")))
			p.waitJS(isOpen+` && document.getAnimations().length === 0`, 3*time.Second)
		}
		open()
		// The ☰ button is not under the drawer: a tap on it reaches it.
		if hit := eval[bool](p, `(() => { const b = document.getElementById("toggle-sidebar").getBoundingClientRect();
			const e = document.elementFromPoint(b.x + b.width/2, b.y + b.height/2); return e && e.closest("#toggle-sidebar, #close-sidebar") !== null; })()`); !hit {
			t.Error("the open drawer covers the button that toggles it")
		}
		p.do(chromedp.MouseClickXY(370, 600)) // outside the drawer
		p.waitJS(closed, 3*time.Second)
		open()
		p.do(press("Escape", false))
		p.waitJS(closed, 3*time.Second)
		open()
		p.do(chromedp.Click(chromedp.CSS("#new-chat")))
		p.waitJS(closed, 3*time.Second)
	})

	// A malformed record, imported or stored, breaks neither the import
	// nor the page after a reload.
	t.Run("BadImport", func(t *testing.T) {
		p := page{t, ctx}
		p.fresh(ts.base)
		bad := `{"version":1,"conversations":[{"id":"x1","title":"odd meta","messages":[
			{"role":"user","content":"hi"},{"role":"assistant","content":"hello","meta":{"tps":"fast","ttft":"soon","completion":{}}}]},
			{"id":"x2","title":"odd messages","messages":[null,5,{"role":"assistant","content":{"a":1}}],"temperature":"hot"}]}`
		errText := eval[string](p, fmt.Sprintf(`(async () => { const app = await import("/web/app.js");
			try { app.importJSON(%s); return ""; } catch (e) { return e.message; } })()`, js(bad)))
		if errText != "" {
			t.Errorf("importing a record with a malformed meta threw %q", errText)
		}
		p.open(ts.base)
		if got := p.titles(); !contains(got, "odd meta") || !contains(got, "odd messages") {
			t.Fatalf("after a reload the list is %q", got)
		}
		eval[bool](p, `([...document.querySelectorAll("#conv-list .conv-open")].find(b => b.textContent === "odd meta").click(), true)`)
		if got := p.messages(); len(got) != 2 || got[1] != "assistant: hello" {
			t.Errorf("the conversation shows %q", got)
		}
		// A store written by anything else: one bad record, one good.
		eval[bool](p, `(localStorage.setItem("vkllm.chat.v1", JSON.stringify({current: "a", conversations: [
			{id: "a", title: "broken", messages: [{role: "assistant", content: "x", meta: {tps: "fast"}}]}, 7,
			{id: "b", title: "fine", messages: [{role: "user", content: "still here"}]}]})), true)`)
		p.open(ts.base)
		if got := p.titles(); len(got) != 2 || got[0] != "broken" || got[1] != "fine" {
			t.Errorf("with a malformed stored record the list is %q", got)
		}
		if got := p.messages(); len(got) != 1 || got[0] != "assistant: x" {
			t.Errorf("the malformed stored conversation shows %q", got)
		}
	})

	// Errors at load show instead of "Loading models…".
	t.Run("LoadErrors", func(t *testing.T) {
		p := page{t, ctx}
		ts.unreachable.Store(true)
		defer ts.unreachable.Store(false)
		p.do(chromedp.Navigate(ts.base + "/"))
		p.waitJS(`/Could not reach the server/.test(document.getElementById("messages").textContent)`, 5*time.Second)
		ts.unreachable.Store(false)
		p.do(chromedp.Click(chromedp.CSS("#messages .retry")))
		p.waitJS(`document.querySelectorAll("#model option").length >= 3`, 5*time.Second)
		if txt := eval[string](p, `document.getElementById("messages").textContent`); strings.Contains(txt, "Could not") {
			t.Errorf("after a retry the page still shows %q", txt)
		}
		// A server with a key, and the key dialog cancelled.
		keyed := startServer(t, "sekret")
		p.do(chromedp.Navigate(keyed.base + "/"))
		eval[bool](p, `(localStorage.clear(), true)`)
		p.do(chromedp.Reload())
		p.waitJS(`document.getElementById("key-dialog").open`, 5*time.Second)
		p.do(chromedp.Click(chromedp.CSS("#key-cancel")))
		p.waitJS(`/Error 401/.test(document.getElementById("messages").textContent)`, 5*time.Second)
		if txt := eval[string](p, `document.getElementById("messages").textContent`); strings.Contains(txt, "Loading") {
			t.Errorf("after a refused key the page shows %q", txt)
		}
	})

	// Settings typed before the first chat apply to it.
	t.Run("SettingsFirst", func(t *testing.T) {
		p := page{t, ctx}
		p.fresh(ts.base)
		p.do(chromedp.Click(chromedp.CSS("#toggle-settings")))
		p.setting("model", "tiny")
		p.setting("max_tokens", "3")
		p.setting("seed", "7")
		p.setting("system", "Be brief.")
		n := len(ts.chatBodies())
		p.send("count to three")
		p.settled()
		bodies := ts.chatBodies()[n:]
		if len(bodies) != 1 {
			t.Fatalf("%d chat requests", len(bodies))
		}
		var req struct {
			MaxTokens *int `json:"max_tokens"`
			Seed      *int `json:"seed"`
			Messages  []struct{ Role, Content string }
		}
		json.Unmarshal([]byte(bodies[0]), &req)
		if req.MaxTokens == nil || *req.MaxTokens != 3 || req.Seed == nil || *req.Seed != 7 ||
			len(req.Messages) != 2 || req.Messages[0].Content != "Be brief." {
			t.Errorf("the first request was %s: the settings typed before it are lost", bodies[0])
		}
		if v := eval[string](p, `document.getElementById("max_tokens").value`); v != "3" {
			t.Errorf("max tokens shows %q after the send", v)
		}
	})

	// Stopped before its first token, an answer leaves no empty turn to
	// send back.
	t.Run("EarlyStop", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "hold")
		p.send("wait for it")
		p.waitJS(`document.querySelector(".msg.streaming") !== null`, 3*time.Second)
		p.do(chromedp.Click(chromedp.CSS("#stop")))
		p.settledWithin(2 * time.Second)
		if got := p.messages(); len(got) != 1 || got[0] != "user: wait for it" {
			t.Errorf("after an early stop the page shows %q", got)
		}
		p.setting("model", "script")
		n := len(ts.chatBodies())
		p.send("now answer")
		p.settled()
		bodies := ts.chatBodies()[n:]
		if len(bodies) != 1 || strings.Contains(bodies[0], `"role":"assistant"`) {
			t.Errorf("the request after an early stop: %q, want no assistant turn", bodies)
		}
	})

	// An answer replayed from the inference cache claims no speed.
	t.Run("CacheHitSpeed", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "tiny")
		p.setting("max_tokens", "16")
		p.setting("seed", "3") // seeded: the repeat is the cache's
		p.send("say it twice")
		p.settled()
		first := eval[string](p, `document.querySelector('#messages .msg[data-role="assistant"] .meta').textContent`)
		p.do(chromedp.Click(chromedp.CSS("#messages .regenerate")))
		p.settled()
		again := eval[string](p, `document.querySelector('#messages .msg[data-role="assistant"] .meta').textContent`)
		if !strings.Contains(first, "tok/s") {
			t.Errorf("a computed answer's meta %q has no speed", first)
		}
		if strings.Contains(again, "tok/s") || !strings.Contains(again, "from the inference cache") {
			t.Errorf("a replayed answer's meta %q, want no speed and the cache named", again)
		}
	})

	// Layout at 1280 px: titles use the row (its actions show on hover
	// or focus), the message box is as wide as the messages.
	t.Run("Layout", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "script")
		p.send("a fairly long conversation title to read")
		p.settled()
		p.do(chromedp.MouseClickXY(700, 20)) // the pointer away from the list
		w := eval[float64](p, `document.querySelector("#conv-list .conv-open").getBoundingClientRect().width`)
		if w < 200 {
			t.Errorf("the title has %vpx of a 260px row", w)
		}
		p.do(chromedp.Focus(chromedp.CSS("#conv-list .conv-open")))
		if vis := eval[bool](p, `document.querySelector("#conv-list .conv-rename").getBoundingClientRect().width > 0`); !vis {
			t.Error("with the row focused its Rename button is hidden")
		}
		type box struct{ L, R float64 }
		msg := eval[box](p, `(() => { const r = document.querySelector("#messages .msg").getBoundingClientRect(); return {L: r.left, R: r.right}; })()`)
		in := eval[box](p, `(() => { const a = document.getElementById("input").getBoundingClientRect(), b = document.getElementById("send").getBoundingClientRect(); return {L: a.left, R: b.right}; })()`)
		if in.L < msg.L-2 || in.R > msg.R+2 {
			t.Errorf("the message box spans %v..%v px, the messages %v..%v", in.L, in.R, msg.L, msg.R)
		}
	})

	// The icon is served, and one model file is one entry in the picker.
	t.Run("FaviconAndModels", func(t *testing.T) {
		p := page{t, ctx}
		p.fresh(ts.base)
		if got := eval[string](p, `fetch("/favicon.ico").then(r => r.status + " " + r.headers.get("Content-Type"))`); !strings.HasPrefix(got, "200 image/") {
			t.Errorf("GET /favicon.ico: %s", got)
		}
		models := eval[[]string](p, `[...document.querySelectorAll("#model option")].map(o => o.value)`)
		if strings.Join(models, ",") != "tiny,script,broken,hold,think" {
			t.Errorf("the model picker lists %q, want tiny, script, broken, hold, think", models)
		}
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
