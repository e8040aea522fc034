package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The goldens are made by tools/make_tokenizer_goldens.py with HF tokenizers.
var goldenNames = []string{"qwen3", "llama3", "llama2", "smollm2",
	// Variants: a base file with components replaced (see the script).
	"llama2-metaspace-first", "llama2-metaspace-split", "smollm2-added", "smollm2-split"}

type goldenCase struct {
	Text       string  `json:"text"`
	IDs        []int32 `json:"ids"`
	IDsSpecial []int32 `json:"ids_special"`
	Decode     string  `json:"decode"`
	DecodeSkip string  `json:"decode_skip"`
}

type goldenFile struct {
	Meta        map[string]any             `json:"meta"`
	Base        string                     `json:"base"`
	Patch       map[string]json.RawMessage `json:"patch"`
	AddedExtra  []json.RawMessage          `json:"added_tokens_extra"`
	Cases       []goldenCase               `json:"cases"`
	DecodeCases []struct {
		IDs        []int32 `json:"ids"`
		Decode     string  `json:"decode"`
		DecodeSkip string  `json:"decode_skip"`
	} `json:"decode_cases"`
}

func readGz(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenDir(name string) string { return filepath.Join("..", "testdata", "tokenizers", name) }

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadGolden returns the tokenizer of a golden set (loaded once per run).
func loadGolden(t testing.TB, name string) *Tokenizer {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[name]; ok {
		return tk
	}
	var data []byte
	if _, err := os.Stat(filepath.Join(goldenDir(name), "tokenizer.json.gz")); err == nil {
		data = readGz(t, filepath.Join(goldenDir(name), "tokenizer.json.gz"))
	} else {
		data = patchedJSON(t, name)
	}
	var cfg []byte
	if _, err := os.Stat(filepath.Join(goldenDir(name), "tokenizer_config.json.gz")); err == nil {
		cfg = readGz(t, filepath.Join(goldenDir(name), "tokenizer_config.json.gz"))
	}
	tk, err := FromJSONWithConfig(data, cfg)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	loaded[name] = tk
	return tk
}

// patchedJSON builds a variant's tokenizer.json: the base file with the
// patch's top-level keys replaced and added_tokens_extra appended (ids after
// every id in use, as the script does).
func patchedJSON(t testing.TB, name string) []byte {
	g := loadGoldenCases(t, name)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(readGz(t, filepath.Join(goldenDir(g.Base), "tokenizer.json.gz")), &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range g.Patch {
		doc[k] = v
	}
	var added []map[string]any
	if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
		t.Fatal(err)
	}
	var model struct {
		Vocab map[string]int64 `json:"vocab"`
	}
	if err := json.Unmarshal(doc["model"], &model); err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	for _, id := range model.Vocab {
		next = max(next, id+1)
	}
	for _, a := range added {
		next = max(next, int64(a["id"].(float64))+1)
	}
	for i, raw := range g.AddedExtra {
		var a map[string]any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		a["id"] = next + int64(i)
		added = append(added, a)
	}
	var err error
	if doc["added_tokens"], err = json.Marshal(added); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func loadGoldenCases(t testing.TB, name string) *goldenFile {
	var g goldenFile
	if err := json.Unmarshal(readGz(t, filepath.Join(goldenDir(name), "goldens.json.gz")), &g); err != nil {
		t.Fatal(err)
	}
	return &g
}

func eqIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGoldens checks Encode and Decode against HF tokenizers on every golden
// string: all must match.
func TestGoldens(t *testing.T) {
	for _, name := range goldenNames {
		t.Run(name, func(t *testing.T) {
			tk := loadGolden(t, name)
			g := loadGoldenCases(t, name)
			if g.Base == "" && len(g.Cases) < 2000 {
				t.Fatalf("only %d cases", len(g.Cases))
			}
			var bad [5]int
			for i, c := range g.Cases {
				ids, err := tk.Encode(c.Text, false)
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				if !eqIDs(ids, c.IDs) {
					if bad[0] < 5 {
						t.Errorf("case %d Encode(%q, false)\n got %v\nwant %v", i, trunc(c.Text), ids, c.IDs)
					}
					bad[0]++
				}
				ids, _ = tk.Encode(c.Text, true)
				if !eqIDs(ids, c.IDsSpecial) {
					if bad[1] < 5 {
						t.Errorf("case %d Encode(%q, true)\n got %v\nwant %v", i, trunc(c.Text), ids, c.IDsSpecial)
					}
					bad[1]++
				}
				if s, _ := tk.Decode(c.IDsSpecial, false); s != c.Decode {
					if bad[2] < 5 {
						t.Errorf("case %d Decode(%v, false) = %q, want %q", i, c.IDsSpecial, trunc(s), trunc(c.Decode))
					}
					bad[2]++
				}
				if s, _ := tk.Decode(c.IDsSpecial, true); s != c.DecodeSkip {
					if bad[3] < 5 {
						t.Errorf("case %d Decode(%v, true) = %q, want %q", i, c.IDsSpecial, trunc(s), trunc(c.DecodeSkip))
					}
					bad[3]++
				}
			}
			for i, c := range g.DecodeCases {
				s1, _ := tk.Decode(c.IDs, false)
				s2, _ := tk.Decode(c.IDs, true)
				if s1 != c.Decode || s2 != c.DecodeSkip {
					if bad[4] < 5 {
						t.Errorf("decode case %d %v: got %q / %q, want %q / %q", i, c.IDs, s1, s2, c.Decode, c.DecodeSkip)
					}
					bad[4]++
				}
			}
			t.Logf("%s: %d cases, %d decode cases; mismatches encode=%d encode+special=%d decode=%d decode-skip=%d random-decode=%d",
				name, len(g.Cases), len(g.DecodeCases), bad[0], bad[1], bad[2], bad[3], bad[4])
		})
	}
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

var _ = bytes.Equal
