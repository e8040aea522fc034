package tokenizer

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

// smollm2Vocab builds the GGUF metadata of SmolLM2 from its golden
// tokenizer.json, as llama.cpp's converter writes it (pre "smollm").
func smollm2Vocab(t *testing.T) *ggufVocab {
	var doc struct {
		AddedTokens []struct {
			ID      int  `json:"id"`
			Special bool `json:"special"`
		} `json:"added_tokens"`
		Model struct {
			Vocab  map[string]int `json:"vocab"`
			Merges [][2]string    `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(readGz(t, filepath.Join(goldenDir("smollm2"), "tokenizer.json.gz")), &doc); err != nil {
		t.Fatal(err)
	}
	v := &ggufVocab{Model: "gpt2", Pre: "smollm", BOS: 1, EOS: 2, UNK: 0, PAD: 2, AddBOS: new(bool)}
	v.Tokens = make([]string, len(doc.Model.Vocab))
	v.Types = make([]int32, len(doc.Model.Vocab))
	for s, id := range doc.Model.Vocab {
		v.Tokens[id] = s
		v.Types[id] = tokTypeNormal
	}
	for _, a := range doc.AddedTokens {
		if a.Special {
			v.Types[a.ID] = tokTypeControl
		}
	}
	for _, m := range doc.Model.Merges {
		v.Merges = append(v.Merges, m[0]+" "+m[1])
	}
	return v
}

// checkGGUFGoldens runs tk on the cases of the goldens name: Encode
// without and with special tokens and Decode without and with skipping
// them must match HF. It reports the first five cases that differ and how
// many do.
func checkGGUFGoldens(t *testing.T, tk *Tokenizer, name string) {
	t.Helper()
	g := loadGoldenCases(t, name)
	bad := 0
	for i, c := range g.Cases {
		ids, _ := tk.Encode(c.Text, false)
		idsSp, _ := tk.Encode(c.Text, true)
		dec, _ := tk.Decode(c.IDsSpecial, false)
		skip, _ := tk.Decode(c.IDsSpecial, true)
		if !eqIDs(ids, c.IDs) || !eqIDs(idsSp, c.IDsSpecial) || dec != c.Decode || skip != c.DecodeSkip {
			if bad < 5 {
				t.Errorf("case %d %q: ids %v/%v want %v/%v; decode %q/%q want %q/%q",
					i, trunc(c.Text), ids, idsSp, c.IDs, c.IDsSpecial, dec, skip, c.Decode, c.DecodeSkip)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d cases differ", name, bad, len(g.Cases))
	}
}

// TestGGUFVocabSmolLM2: the tokenizer built from GGUF metadata (pre
// "smollm") gives the HF SmolLM2 goldens.
func TestGGUFVocabSmolLM2(t *testing.T) {
	tk, err := fromGGUFVocab(smollm2Vocab(t))
	if err != nil {
		t.Fatal(err)
	}
	checkGGUFGoldens(t, tk, "smollm2")
	if bos, ok := tk.BOS(); !ok || bos != 1 || tk.BOSToken != "<|im_start|>" {
		t.Errorf("BOS %d %v %q", bos, ok, tk.BOSToken)
	}
	if eos := tk.EOS(); len(eos) != 1 || eos[0] != 2 {
		t.Errorf("EOS %v", eos)
	}
}

// TestGGUFVocabLlama: a SentencePiece ("llama") vocab with scores and no
// merges gives what transformers builds from it (goldens "llama2-gguf": the
// llama2 tokens with synthetic scores -(id // 256)).
func TestGGUFVocabLlama(t *testing.T) {
	base := loadGolden(t, "llama2")
	n := len(base.model.vocab)
	v := &ggufVocab{Model: "llama", Pre: "default", BOS: 1, EOS: 2, UNK: 0, PAD: -1,
		Tokens: make([]string, n), Scores: make([]float32, n), Types: make([]int32, n)}
	for s, id := range base.model.vocab {
		v.Tokens[id] = s
	}
	for i := range v.Tokens {
		v.Scores[i] = float32(-(i / 256))
		switch {
		case i == 0:
			v.Types[i] = tokTypeUnknown
		case i < 3:
			v.Types[i] = tokTypeControl
		case i < 259:
			v.Types[i] = tokTypeByte
		default:
			v.Types[i] = tokTypeNormal
		}
	}
	tk, err := fromGGUFVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	checkGGUFGoldens(t, tk, "llama2-gguf")
}

func TestGGUFVocabErrors(t *testing.T) {
	v := smollm2Vocab(t)
	v.Pre = "mystery"
	_, err := fromGGUFVocab(v)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Type != "mystery" {
		t.Errorf("unknown pre: %v", err)
	}
	v = smollm2Vocab(t)
	v.Model = "rwkv"
	if _, err = fromGGUFVocab(v); !errors.As(err, &ue) || ue.Type != "rwkv" {
		t.Errorf("unknown model: %v", err)
	}
	v = smollm2Vocab(t)
	v.BOS = int64(len(v.Tokens))
	var fe *FormatError
	if _, err = fromGGUFVocab(v); !errors.As(err, &fe) {
		t.Errorf("bad bos id: %v", err)
	}
	v = smollm2Vocab(t)
	v.Types = v.Types[:10]
	if _, err = fromGGUFVocab(v); !errors.As(err, &fe) {
		t.Errorf("short token_type: %v", err)
	}
	v = smollm2Vocab(t)
	v.Merges = append(v.Merges, "a b c")
	if _, err = fromGGUFVocab(v); !errors.As(err, &fe) {
		t.Errorf("bad merge: %v", err)
	}
}
