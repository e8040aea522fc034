package tokenizer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzRoundTrip: for the byte-level tokenizers, Decode(Encode(s)) gives s
// back (after the tokenizer's normalizer: Qwen3 applies NFC) for any valid
// UTF-8 s, and the stream decoder agrees with Decode. (SmolLM2's vocab, as
// converted from GGUF, lacks 21 of the 256 byte characters; as in
// tokenizers, those bytes are dropped, so inputs holding them are skipped
// for it.)
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "hello world", "I'M here 'S", "  \t\n\r\n", "漢字😀👨‍👩‍👧", "e\u0301",
		"<|im_start|>user\nhi<|im_end|>", "<|begin_of_text|>", "12345678901234", "\u00a0\u3000\u2028",
		"x'ſy", string(rune(0x2EBF0)) + "a1", "a" + strings.Repeat("\u0301", 40)} {
		f.Add(s)
	}
	names := []string{"qwen3", "llama3", "smollm2"}
	toks := make([]*Tokenizer, len(names))
	for i, n := range names {
		toks[i] = loadGolden(f, n)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if _, err := toks[0].Encode(s, false); err == nil {
				t.Fatalf("Encode(%q) accepted invalid UTF-8", s)
			}
			return
		}
		for i, tk := range toks {
			if !hasByteAlphabet(tk, s) {
				continue
			}
			ids, err := tk.Encode(s, false)
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", names[i], s, err)
			}
			want := s
			if tk.normalizer != nil {
				want = tk.normalizer.normalize(s)
			}
			got, _ := tk.Decode(ids, false)
			if got != want {
				t.Fatalf("%s: Decode(Encode(%+q)) = %+q (ids %v)", names[i], s, got, ids)
			}
			d := tk.NewDecoder()
			d.SkipSpecial = false
			var b strings.Builder
			for _, id := range ids {
				b.WriteString(d.Add(id))
			}
			b.WriteString(d.Flush())
			if b.String() != got {
				t.Fatalf("%s: stream %+q, Decode %+q", names[i], b.String(), got)
			}
		}
	})
}

// hasByteAlphabet reports whether the vocab holds the byte-level character
// of every byte of s.
func hasByteAlphabet(tk *Tokenizer, s string) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := tk.model.vocab[byteToStr[s[i]]]; !ok {
			return false
		}
	}
	return true
}

// tinyJSON is a small complete tokenizer.json (byte-level BPE over "ab").
const tinyJSON = `{"version":"1.0","added_tokens":[{"id":6,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":{"type":"Sequence","normalizers":[{"type":"NFC"},{"type":"Replace","pattern":{"String":"x"},"content":"a"}]},
"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\p{N}|[a-z]+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]},
"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[6],"tokens":["<s>"]}}},
"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},
"model":{"type":"BPE","dropout":null,"unk_token":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,
"vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"Ġab":4,"abab":5},"merges":[["a","b"],["Ġ","ab"],["ab","ab"]]}}`

// FuzzFromJSON: the loader never panics, whatever the bytes; what loads
// can encode and decode.
func FuzzFromJSON(f *testing.F) {
	f.Add([]byte(tinyJSON))
	f.Add([]byte(strings.Replace(tinyJSON, `[["a","b"],["Ġ","ab"],["ab","ab"]]`, `["a b","Ġ ab","ab ab"]`, 1)))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`))
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]}}`))
	f.Add([]byte(`{"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},"model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,"fuse_unk":true,"vocab":{"<unk>":0,"<0x41>":1,"▁":2},"merges":[]}}`))
	f.Add([]byte(`{"model":{"type":"WordPiece","vocab":{}}}`))
	f.Add([]byte(`{"added_tokens":[{"id":1,"content":"x","lstrip":true,"rstrip":true,"single_word":true,"normalized":true,"special":false}],"model":{"type":"BPE","vocab":{"x":0},"merges":[]}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab xab 12 <s>", "  é\u0301 😀 "} {
			ids, err := tk.Encode(s, true)
			if err != nil {
				continue
			}
			tk.Decode(ids, false)
			tk.Decode(ids, true)
		}
		tk.Decode([]int32{-1, 0, 1, 2, 1 << 30}, false)
	})
}

// FuzzScanners checks the hand-written pre-tokenizer scanners against
// regexp2 running the same regexes. Characters whose class differs between
// tokenizers' Unicode 16 and Go's 15.0 tables (which regexp2 uses) are
// skipped, and so is 'ſ', which Oniguruma's case folding matches as s.
func FuzzScanners(f *testing.F) {
	for _, s := range []string{"Hello world's 'LL 're", "  a\t\tb\n\n c\r\n", "x1234567 ١٢٣ 漢字!!\n\n", "'s'S'sx ' '",
		"\u00a0\u3000a", " !!\n\r\n x", "a  \n", "    ", "((a))", " 1 12 123 1234", "\u2028\u2029\u0085"} {
		f.Add(s)
	}
	pats := []struct {
		fast matcher
		pat  string
	}{{gpt2Matcher{}, patGPT2}, {llama3Matcher{3}, patLlama3}, {llama3Matcher{1}, patQwen2}}
	slow := make([]*regexMatcher, len(pats))
	for i, p := range pats {
		m, err := compileRegexp2(p.pat)
		if err != nil {
			f.Fatal(err)
		}
		slow[i] = m
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, r := range s {
			var goCls uint8
			switch {
			case unicode.IsLetter(r):
				goCls = clsLetter
			case unicode.IsNumber(r):
				goCls = clsNumber
			case isWhiteSpace(r):
				goCls = clsSpace
			}
			if goCls != classOf(r) || r == 'ſ' {
				return
			}
		}
		for i, p := range pats {
			got := p.fast.appendMatches(nil, s)
			want := slow[i].appendMatches(nil, s)
			if len(got) != len(want) {
				t.Fatalf("%s on %+q: fast %v, regexp2 %v", p.pat, s, got, want)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%s on %+q: fast %v, regexp2 %v", p.pat, s, got, want)
				}
			}
		}
	})
}

// FuzzNormalize: every form yields valid UTF-8, is idempotent, and NFC/NFKC
// of the decomposed forms equal NFC/NFKC of the input.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"é", "e\u0301", "\u1100\u1161\u11a8", "ﬁ", "a\u0316\u0301\u0334", "\U00100041\u0301",
		"\u0b47\u0b3e", "\u212b", "a" + strings.Repeat("\u0301", 40), "\u0344"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, fm := range []normForm{formNFC, formNFD, formNFKC, formNFKD} {
			n := normalizeForm(s, fm)
			if !utf8.ValidString(n) {
				t.Fatalf("form %d of %+q: invalid UTF-8", fm, s)
			}
			if n2 := normalizeForm(n, fm); n2 != n {
				t.Fatalf("form %d not idempotent on %+q: %+q then %+q", fm, s, n, n2)
			}
		}
		if a, b := normalizeForm(s, formNFC), normalizeForm(normalizeForm(s, formNFD), formNFC); a != b {
			t.Fatalf("NFC(%+q) = %+q but NFC(NFD) = %+q", s, a, b)
		}
		if a, b := normalizeForm(s, formNFKC), normalizeForm(normalizeForm(s, formNFKD), formNFKC); a != b {
			t.Fatalf("NFKC(%+q) = %+q but NFKC(NFKD) = %+q", s, a, b)
		}
	})
}
