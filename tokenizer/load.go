package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// FromFile loads a tokenizer from a tokenizer.json file, or from a folder
// holding one. A tokenizer_config.json next to it, if present, fills the
// config fields (BOSToken, ChatTemplate, …).
func FromFile(path string) (*Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	dir := filepath.Dir(path)
	if st.IsDir() {
		dir = path
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := FromJSONWithConfig(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromJSON loads a tokenizer from the contents of a tokenizer.json file.
func FromJSON(data []byte) (*Tokenizer, error) {
	return FromJSONWithConfig(data, nil)
}

// FromJSONWithConfig is FromJSON plus the contents of tokenizer_config.json
// (nil or empty: none).
func FromJSONWithConfig(data, config []byte) (*Tokenizer, error) {
	var raw struct {
		Version       *string         `json:"version"`
		AddedTokens   []rawAddedToken `json:"added_tokens"`
		Normalizer    json.RawMessage `json:"normalizer"`
		PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
		PostProcessor json.RawMessage `json:"post_processor"`
		Decoder       json.RawMessage `json:"decoder"`
		Model         json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, formatErr("", "%w", err)
	}
	if raw.Version != nil && *raw.Version != "1.0" {
		return nil, &UnsupportedError{Component: "tokenizer.json version", Type: *raw.Version}
	}
	t := &Tokenizer{bosID: -1}
	var err error
	if t.normalizer, err = parseNormalizer(raw.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if t.preTok, err = parsePreTokenizer(nil, raw.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if t.model, err = parseModel(raw.Model); err != nil {
		return nil, err
	}
	if t.decoder, err = parseDecoder(raw.Decoder, "decoder"); err != nil {
		return nil, err
	}
	if err := t.setAddedTokens(raw.AddedTokens); err != nil {
		return nil, err
	}
	// The post-processor refers to tokens by id (or name); parse it last.
	if t.post, err = t.parsePostProcessor(raw.PostProcessor, "post_processor"); err != nil {
		return nil, err
	}
	t.finish()
	if len(bytes.TrimSpace(config)) > 0 {
		if err := t.applyConfig(config); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// finish indexes the vocab and picks the fast paths.
func (t *Tokenizer) finish() {
	t.idToTok = make(map[int32]string, len(t.model.vocab))
	for s, id := range t.model.vocab {
		if old, ok := t.idToTok[id]; !ok || s < old { // deterministic if ids repeat
			t.idToTok[id] = s
		}
		t.maxID = max(t.maxID, id)
	}
	for id := range t.addedByID {
		t.maxID = max(t.maxID, id)
	}
	var hasFallback func(d decoder) bool
	hasFallback = func(d decoder) bool {
		switch d := d.(type) {
		case byteFallbackDec:
			return true
		case decoderSeq:
			for _, x := range d {
				if hasFallback(x) {
					return true
				}
			}
		}
		return false
	}
	t.byteFallbackDec = hasFallback(t.decoder)
	// A final ByteLevel step can hand raw bytes to a byte-level BPE model.
	if n := len(t.preTok); n > 0 {
		if bl, ok := t.preTok[n-1].(*byteLevelPre); ok && t.model.useRawBytes() {
			bl.rawOut = true
			if !bl.addPrefixSpace && !bl.useRegex {
				t.preTok = t.preTok[:n-1] // nothing left to do
			}
		}
	}
}

type rawAddedToken struct {
	ID         *int64 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// setAddedTokens registers the added tokens as tokenizers' add_tokens does:
// a token already in the vocab keeps that id, a new one gets the next free
// id after the model's vocab (the "id" in the file is only checked by
// tokenizers, with a warning).
func (t *Tokenizer) setAddedTokens(raws []rawAddedToken) error {
	t.addedByID = map[int32]*AddedToken{}
	t.addedByText = map[string]int32{}
	t.decodeText = map[int32]string{}
	t.special = map[string]bool{}
	nextID := int64(len(t.model.vocab))
	for i, r := range raws {
		if !utf8.ValidString(r.Content) {
			return formatErr(fmt.Sprintf("added_tokens[%d]", i), "content is not valid UTF-8")
		}
		if r.Content == "" {
			continue
		}
		a := &AddedToken{Content: r.Content, SingleWord: r.SingleWord, LStrip: r.LStrip,
			RStrip: r.RStrip, Special: r.Special, Normalized: !r.Special}
		if r.Normalized != nil {
			a.Normalized = *r.Normalized
		}
		if id, ok := t.addedByText[a.Content]; ok {
			if old := t.addedByID[id]; old != nil && *old == (AddedToken{ID: id, Content: a.Content,
				SingleWord: a.SingleWord, LStrip: a.LStrip, RStrip: a.RStrip, Normalized: a.Normalized,
				Special: a.Special}) {
				continue
			}
		}
		id, ok := t.TokenID(a.Content)
		if !ok {
			if nextID > 1<<31-1 {
				return formatErr(fmt.Sprintf("added_tokens[%d]", i), "too many tokens")
			}
			id = int32(nextID)
			nextID++
		}
		a.ID = id
		t.addedByText[a.Content] = id
		if a.Special {
			t.special[a.Content] = true
		}
		t.addedByID[id] = a
		t.added = append(t.added, a)
	}
	// Matching sets, from the final id → token map (as refresh_added_tokens).
	ids := make([]int32, 0, len(t.addedByID))
	for id := range t.addedByID {
		ids = append(ids, id)
	}
	sortInt32(ids)
	var rawPats, normPats []string
	var rawToks, normToks []*AddedToken
	for _, id := range ids {
		a := t.addedByID[id]
		if a.Normalized {
			pat := a.Content
			if t.normalizer != nil {
				if n := t.normalizer.normalize(a.Content); n != a.Content {
					t.decodeText[id] = n
					pat = n
				}
			}
			normPats, normToks = append(normPats, pat), append(normToks, a)
		} else {
			rawPats, rawToks = append(rawPats, a.Content), append(rawToks, a)
		}
	}
	if len(rawPats) > 0 {
		t.rawSet = &addedSet{trie: newTokenTrie(rawPats), tokens: rawToks}
	}
	if len(normPats) > 0 {
		t.normSet = &addedSet{trie: newTokenTrie(normPats), tokens: normToks}
	}
	return nil
}

func sortInt32(s []int32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func parseModel(m json.RawMessage) (*bpe, error) {
	if isNull(m) {
		return nil, formatErr("model", "missing")
	}
	var v struct {
		Type         string          `json:"type"`
		Dropout      *float64        `json:"dropout"`
		UnkToken     *string         `json:"unk_token"`
		Prefix       *string         `json:"continuing_subword_prefix"`
		Suffix       *string         `json:"end_of_word_suffix"`
		FuseUnk      *bool           `json:"fuse_unk"`
		ByteFallback *bool           `json:"byte_fallback"`
		IgnoreMerges *bool           `json:"ignore_merges"`
		Vocab        json.RawMessage `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
	}
	if err := json.Unmarshal(m, &v); err != nil {
		return nil, formatErr("model", "%w", err)
	}
	if v.Type != "" && v.Type != "BPE" {
		return nil, &UnsupportedError{Component: "model", Type: v.Type}
	}
	if v.Type == "" && isNull(v.Merges) {
		return nil, &UnsupportedError{Component: "model", Type: "(untyped, not BPE)"}
	}
	if v.Dropout != nil && *v.Dropout != 0 {
		if *v.Dropout < 0 || *v.Dropout > 1 {
			return nil, formatErr("model.dropout", "%v is not in [0, 1]", *v.Dropout)
		}
		return nil, &UnsupportedError{Component: "model option", Type: fmt.Sprintf("dropout=%v", *v.Dropout)}
	}
	if isNull(v.Vocab) || isNull(v.Merges) {
		return nil, formatErr("model", "missing vocab/merges")
	}
	var vocab map[string]int32
	if err := json.Unmarshal(v.Vocab, &vocab); err != nil {
		return nil, formatErr("model.vocab", "%w", err)
	}
	for s, id := range vocab {
		if id < 0 {
			return nil, formatErr("model.vocab", "token %q has negative id %d", s, id)
		}
	}
	merges, err := parseMerges(v.Merges)
	if err != nil {
		return nil, err
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	mdl, err := newBPE(vocab, merges, str(v.UnkToken), str(v.Prefix), str(v.Suffix))
	if err != nil {
		return nil, err
	}
	mdl.fuseUnk = v.FuseUnk != nil && *v.FuseUnk
	mdl.byteFallback = v.ByteFallback != nil && *v.ByteFallback
	mdl.ignoreMerges = v.IgnoreMerges != nil && *v.IgnoreMerges
	return mdl, nil
}

// parseMerges reads merges as ["a b", …] or [["a", "b"], …].
func parseMerges(m json.RawMessage) ([][2]string, error) {
	var tuples [][]string
	if err := json.Unmarshal(m, &tuples); err == nil {
		pairs := make([][2]string, len(tuples))
		for i, tp := range tuples {
			if len(tp) != 2 {
				return nil, formatErr(fmt.Sprintf("model.merges[%d]", i), "a merge pair has %d tokens, want 2", len(tp))
			}
			pairs[i] = [2]string{tp[0], tp[1]}
		}
		return pairs, nil
	}
	var pairs [][2]string
	var lines []string
	if err := json.Unmarshal(m, &lines); err != nil {
		return nil, formatErr("model.merges", "neither [\"a b\", …] nor [[\"a\", \"b\"], …]: %w", err)
	}
	pairs = make([][2]string, 0, len(lines))
	rank := 0
	for _, l := range lines {
		if len(l) >= 8 && l[:8] == "#version" {
			continue
		}
		a, b, ok := cutSpace(l)
		if !ok {
			return nil, formatErr(fmt.Sprintf("model.merges[%d]", rank), "%q is not two tokens separated by one space", l)
		}
		pairs = append(pairs, [2]string{a, b})
		rank++
	}
	return pairs, nil
}

// cutSpace splits "a b" at its only space.
func cutSpace(l string) (string, string, bool) {
	i := bytes.IndexByte([]byte(l), ' ')
	if i < 0 || bytes.IndexByte([]byte(l[i+1:]), ' ') >= 0 {
		return "", "", false
	}
	return l[:i], l[i+1:], true
}
