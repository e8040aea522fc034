package chat

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Goldens made by tools/make_chat_goldens.py: transformers'
// apply_chat_template(..., tokenize=False) on real templates.

const testdataDir = "../../testdata/chat"

type goldenTemplate struct {
	Name          string            `json:"name"`
	Source        string            `json:"source"`
	ChatTemplate  string            `json:"chat_template"`
	SpecialTokens map[string]string `json:"special_tokens"`
}

type goldenCase struct {
	Template            string                     `json:"template"`
	ChatTemplate        string                     `json:"chat_template"`
	SpecialTokens       map[string]string          `json:"special_tokens"`
	ID                  string                     `json:"id"`
	Messages            []Message                  `json:"messages"`
	Tools               []Tool                     `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	Kwargs              map[string]json.RawMessage `json:"kwargs"`
	Expected            *string                    `json:"expected"`
	Error               *string                    `json:"error"`
}

type goldenFile struct {
	Meta     map[string]any `json:"meta"`
	Strftime []struct {
		Time     string `json:"time"`
		Format   string `json:"format"`
		Expected string `json:"expected"`
	} `json:"strftime"`
	Cases []goldenCase `json:"cases"`
}

func loadGoldenTemplate(t testing.TB, name string) goldenTemplate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenTemplate
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func loadGoldens(t testing.TB) goldenFile {
	t.Helper()
	f, err := os.Open(filepath.Join(testdataDir, "goldens.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		t.Fatal(err)
	}
	return g
}

// input is the Input transformers rendered: the tokenizer's special tokens
// (bos/eos as fields, the others as kwargs), then the case's kwargs.
func (c *goldenCase) input(special map[string]string) Input {
	in := Input{Messages: c.Messages, Tools: c.Tools, AddGenerationPrompt: c.AddGenerationPrompt,
		Kwargs: map[string]any{}}
	for k, v := range special {
		switch k {
		case "bos_token":
			in.BOSToken = v
		case "eos_token":
			in.EOSToken = v
		default:
			in.Kwargs[k] = v
		}
	}
	for k, v := range c.Kwargs {
		in.Kwargs[k] = v
	}
	return in
}

func TestGoldens(t *testing.T) {
	g := loadGoldens(t)
	t.Logf("goldens: %d cases, meta %v", len(g.Cases), g.Meta)
	templates := map[string]*Template{}
	specials := map[string]map[string]string{}
	count := map[string]int{}
	failed := map[string]int{}
	for i := range g.Cases {
		c := &g.Cases[i]
		tpl, ok := templates[c.Template]
		if c.ChatTemplate != "" {
			var err error
			if tpl, err = Parse(c.ChatTemplate); err != nil {
				count[c.Template]++
				failed[c.Template]++
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			specials[c.Template] = c.SpecialTokens
		} else if !ok {
			gt := loadGoldenTemplate(t, c.Template)
			var err error
			tpl, err = Parse(gt.ChatTemplate)
			if err != nil {
				t.Fatalf("%s: %v", c.Template, err)
			}
			templates[c.Template] = tpl
			specials[c.Template] = gt.SpecialTokens
		}
		count[c.Template]++
		got, err := tpl.Render(c.input(specials[c.Template]))
		switch {
		case c.Error != nil:
			var te *TemplateError
			if !errors.As(err, &te) || te.Message != *c.Error {
				failed[c.Template]++
				t.Errorf("%s: got (%q, %v), want TemplateError %q", c.ID, got, err, *c.Error)
			}
		case err != nil:
			failed[c.Template]++
			t.Errorf("%s: %v", c.ID, err)
		case got != *c.Expected:
			failed[c.Template]++
			t.Errorf("%s: mismatch\n got: %q\nwant: %q", c.ID, got, *c.Expected)
		}
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	sort.Strings(names)
	var summary []string
	for _, n := range names {
		summary = append(summary, n+": "+itoa(count[n]-failed[n])+"/"+itoa(count[n]))
	}
	t.Logf("byte-identical: %s", strings.Join(summary, ", "))
	if len(count) < 5 {
		t.Errorf("only %d templates in the goldens", len(count))
	}
	for _, n := range names {
		if n != "feature" && count[n] < 50 {
			t.Errorf("%s: only %d cases", n, count[n])
		}
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestStrftimeGoldens checks strftime against Python's datetime.strftime.
func TestStrftimeGoldens(t *testing.T) {
	g := loadGoldens(t)
	if len(g.Strftime) == 0 {
		t.Fatal("no strftime vectors")
	}
	for _, v := range g.Strftime {
		tm, err := time.Parse("2006-01-02T15:04:05.999999", v.Time)
		if err != nil {
			t.Fatal(err)
		}
		if got := strftime(tm, v.Format); got != v.Expected {
			t.Errorf("strftime(%s, %q) = %q, want %q", v.Time, v.Format, got, v.Expected)
		}
	}
}

// TestStrftimeNow renders Llama 3.2, whose template calls
// strftime_now("%d %b %Y") when no date_string is given: with the clock set
// to 26 Jul 2024 it must equal transformers' rendering with date_string
// "26 Jul 2024".
func TestStrftimeNow(t *testing.T) {
	g := loadGoldens(t)
	gt := loadGoldenTemplate(t, "llama3.2")
	tpl, err := Parse(gt.ChatTemplate)
	if err != nil {
		t.Fatal(err)
	}
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Date(2024, 7, 26, 23, 59, 0, 0, time.Local) }
	checked := 0
	for i := range g.Cases {
		c := &g.Cases[i]
		if c.Template != "llama3.2" || c.Expected == nil || string(c.Kwargs["date_string"]) != `"26 Jul 2024"` {
			continue
		}
		in := c.input(gt.SpecialTokens)
		delete(in.Kwargs, "date_string")
		got, err := tpl.Render(in)
		if err != nil || got != *c.Expected {
			t.Errorf("%s without date_string: got (%q, %v), want %q", c.ID, got, err, *c.Expected)
		}
		checked++
	}
	if checked < 50 {
		t.Fatalf("only %d cases checked", checked)
	}
	// And the real clock: today's date appears.
	now = time.Now
	before := strftime(time.Now(), "%d %b %Y")
	got, err := tpl.Render(Input{Messages: []Message{{Role: "user", Content: "hi"}}, BOSToken: "<|begin_of_text|>"})
	after := strftime(time.Now(), "%d %b %Y")
	if err != nil || (!strings.Contains(got, "Today Date: "+before+"\n") && !strings.Contains(got, "Today Date: "+after+"\n")) {
		t.Errorf("got (%q, %v), want today's date %q", got, err, before)
	}
}
