package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
)

// TestTiny checks a small hand-made tokenizer.json against the ids HF
// tokenizers 0.23.3 gives for it (tinyJSON in fuzz_test.go).
func TestTiny(t *testing.T) {
	for _, merges := range []string{"", `["a b","Ġ ab","ab ab"]`} {
		js := tinyJSON
		if merges != "" { // the same merges in the "a b" string form
			js = strings.Replace(js, `[["a","b"],["Ġ","ab"],["ab","ab"]]`, merges, 1)
		}
		tk, err := FromJSON([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			text     string
			withSpec []int32
			plain    []int32
		}{
			{"ab xab 12 <s>", []int32{6, 2, 3, 0, 2, 3, 3, 6}, []int32{2, 3, 0, 2, 3, 3, 6}},
			{"abab", []int32{6, 5}, []int32{5}},
			{"xbab<s>ba", []int32{6, 5, 6, 1, 0}, []int32{5, 6, 1, 0}},
			{"", []int32{6}, nil},
			{"b a", []int32{6, 1, 3, 0}, []int32{1, 3, 0}},
		} {
			got, err := tk.Encode(c.text, true)
			if err != nil || !eqIDs(got, c.withSpec) {
				t.Errorf("Encode(%q, true) = %v, %v; want %v", c.text, got, err, c.withSpec)
			}
			if got, _ = tk.Encode(c.text, false); !eqIDs(got, c.plain) {
				t.Errorf("Encode(%q, false) = %v; want %v", c.text, got, c.plain)
			}
		}
		if s, _ := tk.Decode([]int32{6, 5, 6, 1, 0}, false); s != "<s>abab<s>ba" {
			t.Errorf("Decode = %q", s)
		}
		if s, _ := tk.Decode([]int32{6, 5, 6, 1, 0, 99}, true); s != "ababba" {
			t.Errorf("Decode(skip) = %q", s)
		}
		if id, ok := tk.TokenID("<s>"); !ok || id != 6 || !tk.IsSpecial(6) || tk.IsSpecial(5) {
			t.Errorf("TokenID/IsSpecial wrong: %d %v", id, ok)
		}
		if s, ok := tk.Token(4); !ok || s != "Ġab" {
			t.Errorf("Token(4) = %q, %v", s, ok)
		}
		if _, ok := tk.Token(7); ok {
			t.Errorf("Token(7) exists")
		}
		if tk.VocabSize() != 7 {
			t.Errorf("VocabSize = %d", tk.VocabSize())
		}
	}
}

func TestInvalidUTF8(t *testing.T) {
	tk, err := FromJSON([]byte(tinyJSON))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Encode("ab\xffab", false)
	var ie *InvalidUTF8Error
	if !errors.As(err, &ie) || ie.Offset != 2 || !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("err = %v", err)
	}
}

// TestLoadErrors: unknown component types and broken files give typed
// errors naming the problem.
func TestLoadErrors(t *testing.T) {
	rep := func(old, new string) []byte {
		if !strings.Contains(tinyJSON, old) {
			t.Fatalf("tinyJSON lacks %q", old)
		}
		return []byte(strings.Replace(tinyJSON, old, new, 1))
	}
	unsupported := []struct {
		data []byte
		typ  string
	}{
		{rep(`{"type":"NFC"}`, `{"type":"Precompiled","precompiled_charsmap":""}`), "Precompiled"},
		{rep(`{"type":"Split","pattern"`, `{"type":"Whitespace","x"`), "Whitespace"},
		{rep(`"decoder":{"type":"ByteLevel"`, `"decoder":{"type":"CTC"`), "CTC"},
		{rep(`"post_processor":{"type":"TemplateProcessing"`, `"post_processor":{"type":"Fancy"`), "Fancy"},
		{rep(`"model":{"type":"BPE"`, `"model":{"type":"Unigram"`), "Unigram"},
		{rep(`"behavior":"Isolated"`, `"behavior":"Sideways"`), "Sideways"},
		{rep(`"version":"1.0"`, `"version":"2.0"`), "2.0"},
		{rep(`"dropout":null`, `"dropout":0.1`), "dropout=0.1"},
	}
	for _, c := range unsupported {
		_, err := FromJSON(c.data)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Type != c.typ || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.typ) {
			t.Errorf("want UnsupportedError for %q, got %v", c.typ, err)
		}
		if errcode.Of(err) != errcode.LoadFailed {
			t.Errorf("%q: code %v", c.typ, errcode.Of(err))
		}
	}
	malformed := []struct {
		data  []byte
		where string
	}{
		{[]byte(`{"model":`), ""},
		{rep(`["ab","ab"]`, `["ab","zz"]`), "model.merges[2]"},
		{rep(`["ab","ab"]`, `["ab","ab","ab"]`), "model.merges[2]"},
		{rep(`[["a","b"],["Ġ","ab"],["ab","ab"]]`, `["a b",["Ġ","ab"]]`), "model.merges"},
		{rep(`[["a","b"],["Ġ","ab"],["ab","ab"]]`, `["a b","Ġab"]`), "model.merges[1]"},
		{rep(`{"Regex":"\\p{N}|[a-z]+"}`, `{"Regex":"(unclosed"}`), "pre_tokenizer.pretokenizers[0].pattern"},
		{rep(`"ids":[6]`, `"ids":[-6]`), "post_processor.special_tokens"},
		{rep(`"special_tokens":{"<s>"`, `"special_tokens":{"<t>"`), "post_processor.single[0]"},
		{[]byte(`{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`), "model.vocab"},
		{[]byte(`{"version":"1.0"}`), "model"},
	}
	for _, c := range malformed {
		_, err := FromJSON(c.data)
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Where != c.where || !errors.Is(err, ErrFormat) {
			t.Errorf("want FormatError at %q, got %v", c.where, err)
		}
		if errcode.Of(err) != errcode.ModelCorrupt {
			t.Errorf("%q: code %v", c.where, errcode.Of(err))
		}
	}
}

// TestConfig: tokenizer_config.json fields, from FromFile on a folder.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), readGz(t, filepath.Join(goldenDir("llama2"), f+".gz")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := FromFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if bos, ok := tk.BOS(); !ok || bos != 1 || !tk.AddBOS || tk.AddEOS || tk.BOSToken != "<s>" {
		t.Errorf("BOS = %d %v, AddBOS %v, AddEOS %v, %q", bos, ok, tk.AddBOS, tk.AddEOS, tk.BOSToken)
	}
	if eos := tk.EOS(); len(eos) != 1 || eos[0] != 2 {
		t.Errorf("EOS = %v", eos)
	}
	if _, err := FromFile(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Errorf("FromFile(file): %v", err)
	}
	q := loadGolden(t, "qwen3")
	if !strings.Contains(q.ChatTemplate, "<|im_start|>") || q.EOSToken != "<|im_end|>" {
		t.Errorf("qwen3 config: eos %q, template %.40q", q.EOSToken, q.ChatTemplate)
	}
	if _, ok := q.BOS(); ok {
		t.Errorf("qwen3 has no bos token")
	}
	if eos := q.EOS(); len(eos) != 1 || eos[0] != 151645 {
		t.Errorf("qwen3 EOS = %v", eos)
	}
	if q.VocabSize() != 151669 {
		t.Errorf("qwen3 VocabSize = %d", q.VocabSize())
	}
	// chat_template as a list of named templates.
	tk2, err := FromJSONWithConfig([]byte(tinyJSON), []byte(`{"bos_token":{"content":"<s>","lstrip":false},"chat_template":[{"name":"default","template":"T"},{"name":"tool_use","template":"U"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tk2.ChatTemplate != "T" || tk2.ChatTemplates["tool_use"] != "U" || tk2.BOSToken != "<s>" {
		t.Errorf("config list: %q %v %q", tk2.ChatTemplate, tk2.ChatTemplates, tk2.BOSToken)
	}
}

// TestMergeHeapEqualsSmall: the two merge loops agree on random words.
func TestMergeHeapEqualsSmall(t *testing.T) {
	tk := loadGolden(t, "qwen3")
	m := tk.model
	ws := &workspace{}
	seed := uint32(1)
	rnd := func(n uint32) uint32 { seed = seed*1664525 + 1013904223; return (seed >> 8) % n }
	alphabet := []byte("aaaeeinorst  ,.\xe4\xb8\x80")
	for i := 0; i < 3000; i++ {
		n := 2 + int(rnd(200))
		w := make([]byte, n)
		for k := range w {
			w[k] = alphabet[rnd(uint32(len(alphabet)))]
		}
		var a, b []int32
		for _, c := range w {
			a = append(a, m.byteIDs[c])
		}
		b = append(b, a...)
		a = m.mergeSmall(a, ws)
		b = m.mergeHeap(b, ws)
		if !eqIDs(a, b) {
			t.Fatalf("word %q: small %v, heap %v", w, a, b)
		}
	}
}

// TestConcurrentEncode: one Tokenizer used from several goroutines gives the
// same ids as used alone (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tk := loadGolden(t, "qwen3")
	g := loadGoldenCases(t, "qwen3")
	cases := g.Cases[:400]
	done := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func(w int) {
			for i := range cases {
				c := cases[(i+w*97)%len(cases)]
				ids, err := tk.Encode(c.Text, false)
				if err == nil && !eqIDs(ids, c.IDs) {
					err = errors.New("mismatch on " + c.Text)
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(w)
	}
	for w := 0; w < 4; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
