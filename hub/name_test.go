package hub

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Ref
	}{
		{"hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF", Ref{Owner: "Qwen", Repo: "Qwen2.5-0.5B-Instruct-GGUF"}},
		{"hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", Ref{Owner: "Qwen", Repo: "Qwen2.5-0.5B-Instruct-GGUF", Quant: "Q4_K_M"}},
		{"hf://bartowski/Llama-3.2-1B-Instruct-GGUF:q8_0", Ref{Owner: "bartowski", Repo: "Llama-3.2-1B-Instruct-GGUF", Quant: "q8_0"}},
		{"hf://o/r@v1.0:Q4_0", Ref{Owner: "o", Repo: "r", Revision: "v1.0", Quant: "Q4_0"}},
		{"hf://o/r@refs%2Fpr%2F1/sub/m.gguf", Ref{Owner: "o", Repo: "r", Revision: "refs/pr/1", File: "sub/m.gguf"}},
		{"hf://o/r/model.Q4_1.gguf", Ref{Owner: "o", Repo: "r", File: "model.Q4_1.gguf"}},
		{"hf://o/r@0123456789abcdef0123456789abcdef01234567", Ref{Owner: "o", Repo: "r", Revision: "0123456789abcdef0123456789abcdef01234567"}},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		if s := got.String(); s != c.in {
			t.Errorf("%+v.String() = %q, want %q", got, s, c.in)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		in  string
		off int
	}{
		{"Qwen/Qwen2.5", 0},
		{"hf://", 5},
		{"hf://Qwen", 9},
		{"hf:///r", 5},
		{"hf://o/", 7},
		{"hf://o/r:", 9},
		{"hf://o/r@", 9},
		{"hf://o/r@:Q4", 9},
		{"hf://o/r:Q4 K", 11},
		{"hf://o/r/../x", 9},
		{"hf://o/r/a//b", 9},
		{"hf://o/r/", 9},
		{"hf://o--x/r", 5},
		{"hf://o/-r", 7},
		{"hf://o/r@a@b", 10},
		{"hf://o/r@a%zz", 9},
		{"hf://o/r@a%20b", 9},
		{"hf://o/r@..", 9},
		{"hf://o/r/a\\b", 9},
	} {
		_, err := Parse(c.in)
		var ne *NameError
		if !errors.As(err, &ne) {
			t.Errorf("Parse(%q) = %v, want a *NameError", c.in, err)
			continue
		}
		if ne.Offset != c.off {
			t.Errorf("Parse(%q): offset %d, want %d (%v)", c.in, ne.Offset, c.off, err)
		}
	}
}

// FuzzParse: Parse never panics, a name it accepts prints back to a
// name that parses to the same Ref, and an error is a *NameError with an
// offset inside the name.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", "hf://o/r@refs%2Fpr%2F1/a/b.gguf", "hf://o/r@v1", "hf://o/r/x", "hf://o", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			var ne *NameError
			if !errors.As(err, &ne) || ne.Offset < 0 || ne.Offset > len(s) {
				t.Fatalf("Parse(%q): %v", s, err)
			}
			return
		}
		r2, err := Parse(r.String())
		if err != nil || r2 != r {
			t.Fatalf("Parse(%q) = %+v; its String %q parses to %+v, %v", s, r, r.String(), r2, err)
		}
	})
}
