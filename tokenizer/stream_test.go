package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestStreamDecoder feeds every golden encoding one id at a time: the deltas
// are valid UTF-8 and add up to Decode of all the ids.
func TestStreamDecoder(t *testing.T) {
	for _, name := range goldenNames[:4] {
		t.Run(name, func(t *testing.T) {
			tk := loadGolden(t, name)
			g := loadGoldenCases(t, name)
			for _, skip := range []bool{true, false} {
				for i, c := range g.Cases {
					d := tk.NewDecoder()
					d.SkipSpecial = skip
					var b strings.Builder
					for _, id := range c.IDsSpecial {
						delta := d.Add(id)
						if !utf8.ValidString(delta) {
							t.Fatalf("case %d: invalid UTF-8 delta %q", i, delta)
						}
						b.WriteString(delta)
					}
					b.WriteString(d.Flush())
					want, _ := tk.Decode(c.IDsSpecial, skip)
					if b.String() != want {
						t.Fatalf("case %d (skip=%v): stream %q, Decode %q", i, skip, trunc(b.String()), trunc(want))
					}
				}
				// Random ids: byte tokens, partial characters, specials.
				for i, c := range g.DecodeCases {
					d := tk.NewDecoder()
					d.SkipSpecial = skip
					var b strings.Builder
					for _, id := range c.IDs {
						b.WriteString(d.Add(id))
					}
					b.WriteString(d.Flush())
					want := c.Decode
					if skip {
						want = c.DecodeSkip
					}
					if b.String() != want {
						t.Fatalf("decode case %d (skip=%v) %v: stream %q, HF %q", i, skip, c.IDs, b.String(), want)
					}
				}
			}
		})
	}
}

// TestStreamDecoderHoldsPartialChars checks that the bytes of one character
// spread over tokens come out together, not as U+FFFD first.
func TestStreamDecoderHoldsPartialChars(t *testing.T) {
	for _, c := range []struct{ name, text string }{
		{"llama2", "€ 😀 漢字"}, // byte-fallback tokens <0xE2><0x82><0xAC>
		{"qwen3", "😀🫠 ĳ"},    // byte-level pieces of a 4-byte character
	} {
		tk := loadGolden(t, c.name)
		ids, err := tk.Encode(c.text, false)
		if err != nil {
			t.Fatal(err)
		}
		d := tk.NewDecoder()
		var got []string
		for _, id := range ids {
			if s := d.Add(id); s != "" {
				got = append(got, s)
				if strings.ContainsRune(s, utf8.RuneError) {
					t.Errorf("%s: delta %q holds U+FFFD", c.name, s)
				}
			}
		}
		if rest := d.Flush(); rest != "" {
			got = append(got, rest)
		}
		want, _ := tk.Decode(ids, true)
		if strings.Join(got, "") != want {
			t.Errorf("%s: deltas %q, want %q", c.name, got, want)
		}
		if len(got) >= len(ids) {
			t.Errorf("%s: %d deltas for %d ids: partial characters were not held back (%q)", c.name, len(got), len(ids), got)
		}
	}
}
