package browser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageComforts: what people expect of llama.cpp's page and Open
// WebUI (issue 40, item 2), one subtest each, in one browser and server.
func TestPageComforts(t *testing.T) {
	ctx := newBrowser(t)
	ts := startServer(t, "")
	p := page{t, ctx}
	p.do(chromedp.EmulateViewport(1280, 800), colorScheme("light"))

	// Code blocks are highlighted, and stay text.
	t.Run("Highlighting", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "script")
		p.send("some code")
		p.settled()
		type hl struct {
			Str, Kw []string
			Text    string
			Tags    []string
		}
		r := eval[hl](p, `(() => { const c = document.querySelector("#messages pre code");
			return {Str: [...c.querySelectorAll(".hl-str")].map(e => e.textContent), Kw: [...c.querySelectorAll(".hl-kw")].map(e => e.textContent),
				Text: c.textContent, Tags: [...new Set([...c.querySelectorAll("*")].map(e => e.tagName))]}; })()`)
		if len(r.Str) != 1 || r.Str[0] != `"<script>alert(1)</script>"` || r.Text != `fmt.Println("<script>alert(1)</script>")` {
			t.Errorf("the go block is highlighted as %+v", r)
		}
		if strings.Join(r.Tags, ",") != "SPAN" {
			t.Errorf("the highlighted block holds elements %q, want spans only", r.Tags)
		}
		got := eval[[]string](p, `(async () => { const h = await import("/web/highlight.js"); const c = document.createElement("code");
			h.highlight(c, "def f(x):\n    return 'a' + 1  # done", "python");
			return [...c.children].map(e => e.className + ":" + e.textContent); })()`)
		want := []string{"hl-kw:def", "hl-kw:return", "hl-str:'a'", "hl-num:1", "hl-com:# done"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("python highlighted as %q, want %q", got, want)
		}
	})

	// Each message has a copy button that copies its text.
	t.Run("CopyMessage", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "script")
		p.send("copy me")
		p.settled()
		eval[bool](p, `(navigator.clipboard.writeText = async (t) => { window.__copied = t; }, true)`)
		p.do(chromedp.Click(chromedp.CSS(`#messages .msg[data-role="assistant"] .copy-msg`)))
		p.waitJS(`window.__copied !== undefined`, 2*time.Second)
		if got := eval[string](p, `window.__copied`); got != markdownAnswer {
			t.Errorf("copied %q, want the answer's Markdown", got)
		}
		p.do(chromedp.Click(chromedp.CSS(`#messages .msg[data-role="user"] .copy-msg`)))
		p.waitJS(`window.__copied === "copy me"`, 2*time.Second)
	})

	// The list filters by title and by message text.
	t.Run("Search", func(t *testing.T) {
		p := page{t, ctx}
		p.fresh(ts.base)
		for _, text := range []string{"about zebras", "about lions", "a table please"} {
			p.do(chromedp.Click(chromedp.CSS("#new-chat")))
			p.setting("model", "script")
			p.send(text)
			p.settled()
		}
		typeSearch := func(q string) []string {
			t.Helper()
			eval[bool](p, `(() => { const s = document.getElementById("search"); s.value = `+js(q)+`; s.dispatchEvent(new Event("input")); return true; })()`)
			return p.titles()
		}
		if got := typeSearch("ZEBRA"); len(got) != 1 || got[0] != "about zebras" {
			t.Errorf("search zebra lists %q", got)
		}
		if got := typeSearch("rendering check"); len(got) != 3 { // in every answer
			t.Errorf("search by an answer's text lists %q", got)
		}
		if got := typeSearch("nothing like this"); len(got) != 0 {
			t.Errorf("a search without a match lists %q", got)
		}
		if got := typeSearch(""); len(got) != 3 {
			t.Errorf("an empty search lists %q", got)
		}
	})

	// While an answer streams its speed shows and grows.
	t.Run("LiveSpeed", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "tiny")
		p.setting("max_tokens", "60")
		p.send("stream slowly")
		p.waitJS(`/^\d+ tokens · [\d.]+ tok\/s$/.test(document.querySelector(".msg.streaming .meta.live")?.textContent || "")`, 10*time.Second)
		p.settled()
	})

	// The sampler settings the API has are sent.
	t.Run("SamplerSettings", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "script")
		for id, v := range map[string]string{"top_k": "40", "min_p": "0.05", "repetition_penalty": "1.1",
			"presence_penalty": "0.5", "frequency_penalty": "-0.5", "seed": "9", "stop_strings": "END\n\n###"} {
			p.setting(id, v)
		}
		n := len(ts.chatBodies())
		p.send("with settings")
		p.settled()
		bodies := ts.chatBodies()[n:]
		if len(bodies) != 1 {
			t.Fatalf("%d requests", len(bodies))
		}
		var req map[string]any
		json.Unmarshal([]byte(bodies[0]), &req)
		want := map[string]any{"top_k": 40.0, "min_p": 0.05, "repetition_penalty": 1.1, "presence_penalty": 0.5,
			"frequency_penalty": -0.5, "seed": 9.0}
		for k, v := range want {
			if req[k] != v {
				t.Errorf("%s = %v, want %v", k, req[k], v)
			}
		}
		if stop, _ := json.Marshal(req["stop"]); string(stop) != `["END","###"]` {
			t.Errorf("stop = %s, want [END ###]", stop)
		}
		if got := p.messages(); len(got) != 2 || !strings.HasPrefix(got[1], "assistant: Rendering check") {
			t.Errorf("the server did not take the settings: %q", got)
		}
	})

	// A text file attached goes with the next message, fenced.
	t.Run("AttachFile", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "script")
		file := filepath.Join(t.TempDir(), "notes.txt")
		os.WriteFile(file, []byte("line one\nline two"), 0o644)
		p.do(chromedp.SetUploadFiles(chromedp.CSS("#attach-file"), []string{file}))
		p.waitJS(`document.getElementById("attachment").checkVisibility()`, 3*time.Second)
		n := len(ts.chatBodies())
		p.send("summarise it")
		p.settled()
		bodies := ts.chatBodies()[n:]
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if len(bodies) == 1 {
			json.Unmarshal([]byte(bodies[0]), &req)
		}
		want := "File notes.txt:\n```\nline one\nline two\n```\n\nsummarise it"
		if len(req.Messages) != 1 || req.Messages[0].Content != want {
			t.Errorf("the request was %q, want the file then the question", bodies)
		}
		if eval[bool](p, `document.getElementById("attachment").checkVisibility()`) {
			t.Error("the attachment stays after the send")
		}
	})

	// A thinking model's reasoning shows folded, the answer open.
	t.Run("ThinkingFolded", func(t *testing.T) {
		p := newChat(t, ctx, ts.base, "think")
		p.send("2+2?")
		p.settled()
		type think struct {
			Details int
			Open    bool
			Summary string
			Inside  string
			Answer  string
			Visible bool
			Strong  string
		}
		r := eval[think](p, `(() => { const c = document.querySelector('#messages .msg[data-role="assistant"] .content');
			const d = c.querySelector("details.think");
			return {Details: c.querySelectorAll("details.think").length, Open: !!(d && d.open), Summary: d ? d.querySelector("summary").textContent : "",
				Inside: d ? d.querySelector(".think-body").textContent : "", Answer: c.querySelector(".answer")?.textContent || "",
				Visible: d ? d.querySelector(".think-body").checkVisibility() : true,
				Strong: c.querySelector(".answer strong")?.textContent || ""}; })()`)
		if r.Details != 1 || r.Open || r.Visible || r.Summary != "Reasoning" || !strings.Contains(r.Inside, "secret reasoning") ||
			r.Answer != "The answer is 4." || r.Strong != "4" {
			t.Errorf("the thinking answer renders as %+v", r)
		}
	})
}
