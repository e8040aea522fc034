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

// component is the common head of every pipeline component.
type component struct {
	Type string `json:"type"`
}

func isNull(m json.RawMessage) bool {
	m = bytes.TrimSpace(m)
	return len(m) == 0 || bytes.Equal(m, []byte("null"))
}

// componentType returns the "type" of the component m, or "" when m is
// absent or null (no component). A component without a type is an error.
func componentType(m json.RawMessage, where string) (string, error) {
	if isNull(m) {
		return "", nil
	}
	var c component
	if err := unmarshalAt(m, where, &c); err != nil {
		return "", err
	}
	if c.Type == "" {
		return "", formatErr(where, "no \"type\"")
	}
	return c.Type, nil
}

// rawPattern is {"String": "..."} or {"Regex": "..."}.
type rawPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func (p rawPattern) matcher(where string) (matcher, error) {
	switch {
	case p.String != nil:
		return literalMatcher(*p.String), nil
	case p.Regex != nil:
		m, err := compileRegex(*p.Regex)
		if err != nil {
			return nil, &FormatError{Where: where, Err: err}
		}
		return m, nil
	}
	return nil, formatErr(where, "pattern is neither String nor Regex")
}

// parseReplace reads a Replace normalizer or decoder: the matcher of its
// pattern and the content that replaces each match. An empty String pattern
// is unsupported.
func parseReplace(m json.RawMessage, where string) (matcher, string, error) {
	var v struct {
		Pattern rawPattern `json:"pattern"`
		Content string     `json:"content"`
	}
	if err := unmarshalAt(m, where, &v); err != nil {
		return nil, "", err
	}
	if v.Pattern.String != nil && *v.Pattern.String == "" {
		return nil, "", &UnsupportedError{Component: where, Type: "Replace with an empty pattern"}
	}
	mt, err := v.Pattern.matcher(where + ".pattern")
	if err != nil {
		return nil, "", err
	}
	return mt, v.Content, nil
}

func parseNormalizer(m json.RawMessage, where string) (normalizer, error) {
	typ, err := componentType(m, where)
	if err != nil || typ == "" {
		return nil, err
	}
	switch typ {
	case "Sequence":
		items, err := parseSequence(m, where, "normalizers", parseNormalizer)
		if err != nil {
			return nil, err
		}
		var seq normalizerSeq
		for _, n := range items {
			if inner, ok := n.(normalizerSeq); ok {
				seq = append(seq, inner...)
			} else {
				seq = append(seq, n)
			}
		}
		return seq, nil
	case "NFC":
		return unicodeNorm{formNFC}, nil
	case "NFD":
		return unicodeNorm{formNFD}, nil
	case "NFKC":
		return unicodeNorm{formNFKC}, nil
	case "NFKD":
		return unicodeNorm{formNFKD}, nil
	case "Prepend":
		var v struct {
			Prepend string `json:"prepend"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		return prependNorm(v.Prepend), nil
	case "Replace":
		mt, content, err := parseReplace(m, where)
		if err != nil {
			return nil, err
		}
		return replaceNorm{m: mt, content: content}, nil
	case "Strip":
		var v struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		return stripNorm{v.Left, v.Right}, nil
	}
	return nil, &UnsupportedError{Component: where, Type: typ}
}

func parsePreTokenizer(steps []preTokenizer, m json.RawMessage, where string) ([]preTokenizer, error) {
	typ, err := componentType(m, where)
	if err != nil {
		return nil, err
	}
	if typ == "" {
		return steps, nil
	}
	switch typ {
	case "Sequence":
		subs, paths, err := sequenceItems(m, where, "pretokenizers")
		if err != nil {
			return nil, err
		}
		for i, sub := range subs {
			if steps, err = parsePreTokenizer(steps, sub, paths[i]); err != nil {
				return nil, err
			}
		}
		return steps, nil
	case "Split":
		var v struct {
			Pattern  rawPattern `json:"pattern"`
			Behavior string     `json:"behavior"`
			Invert   bool       `json:"invert"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		mt, err := v.Pattern.matcher(where + ".pattern")
		if err != nil {
			return nil, err
		}
		beh, err := parseBehavior(v.Behavior)
		if err != nil {
			return nil, err
		}
		return append(steps, &splitPre{m: mt, beh: beh, invert: v.Invert}), nil
	case "ByteLevel":
		v := struct {
			AddPrefixSpace bool `json:"add_prefix_space"`
			UseRegex       bool `json:"use_regex"`
		}{true, true}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		return append(steps, &byteLevelPre{addPrefixSpace: v.AddPrefixSpace, useRegex: v.UseRegex}), nil
	case "Metaspace":
		ms, err := parseMetaspace(m, where)
		if err != nil {
			return nil, err
		}
		return append(steps, ms), nil
	case "Digits":
		var v struct {
			Individual bool `json:"individual_digits"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		return append(steps, &digitsPre{individual: v.Individual}), nil
	}
	return nil, &UnsupportedError{Component: where, Type: typ}
}

func parseMetaspace(m json.RawMessage, where string) (*metaspacePre, error) {
	var v struct {
		Replacement    string  `json:"replacement"`
		AddPrefixSpace *bool   `json:"add_prefix_space"`
		PrependScheme  *string `json:"prepend_scheme"`
		Split          *bool   `json:"split"`
	}
	if err := unmarshalAt(m, where, &v); err != nil {
		return nil, err
	}
	if utf8.RuneCountInString(v.Replacement) != 1 {
		return nil, formatErr(where, "replacement %q is not one character", v.Replacement)
	}
	r, _ := utf8.DecodeRuneInString(v.Replacement)
	ms := &metaspacePre{replacement: r, repl: v.Replacement, scheme: prependAlways, splitOn: true}
	if v.PrependScheme != nil {
		switch *v.PrependScheme {
		case "always":
		case "first":
			ms.scheme = prependFirst
		case "never":
			ms.scheme = prependNever
		default:
			return nil, &UnsupportedError{Component: where + ".prepend_scheme", Type: *v.PrependScheme}
		}
	}
	if v.AddPrefixSpace != nil && !*v.AddPrefixSpace {
		if ms.scheme != prependNever {
			return nil, formatErr(where, "add_prefix_space does not match declared prepend_scheme")
		}
	}
	if v.Split != nil {
		ms.splitOn = *v.Split
	}
	return ms, nil
}

func parseDecoder(m json.RawMessage, where string) (decoder, error) {
	typ, err := componentType(m, where)
	if err != nil || typ == "" {
		return nil, err
	}
	switch typ {
	case "Sequence":
		seq, err := parseSequence(m, where, "decoders", parseDecoder)
		if err != nil {
			return nil, err
		}
		return decoderSeq(seq), nil
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		var v struct {
			Content string `json:"content"`
			Start   int    `json:"start"`
			Stop    int    `json:"stop"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(v.Content) != 1 {
			return nil, formatErr(where, "content %q is not one character", v.Content)
		}
		r, _ := utf8.DecodeRuneInString(v.Content)
		return stripDec{content: r, start: max(v.Start, 0), stop: max(v.Stop, 0)}, nil
	case "Replace":
		mt, content, err := parseReplace(m, where)
		if err != nil {
			return nil, err
		}
		return replaceDec{m: mt, content: content}, nil
	case "Metaspace":
		ms, err := parseMetaspace(m, where)
		if err != nil {
			return nil, err
		}
		return metaspaceDec{replacement: ms.replacement, scheme: ms.scheme}, nil
	}
	return nil, &UnsupportedError{Component: where, Type: typ}
}

func (t *Tokenizer) parsePostProcessor(m json.RawMessage, where string) (postProcessor, error) {
	typ, err := componentType(m, where)
	if err != nil || typ == "" {
		return nil, err
	}
	switch typ {
	case "Sequence":
		seq, err := parseSequence(m, where, "processors", t.parsePostProcessor)
		if err != nil {
			return nil, err
		}
		return postSeq(seq), nil
	case "ByteLevel":
		return nil, nil // only trims offsets
	case "TemplateProcessing":
		var v struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				ID  string  `json:"id"`
				IDs []int64 `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		tp := &templatePost{}
		for i, it := range v.Single {
			switch {
			case it.Sequence != nil:
				if it.Sequence.ID != "A" {
					return nil, formatErr(fmt.Sprintf("%s.single[%d]", where, i), "sequence %q in a single template", it.Sequence.ID)
				}
				tp.items = append(tp.items, templateItem{seq: true})
			case it.SpecialToken != nil:
				st, ok := v.SpecialTokens[it.SpecialToken.ID]
				if !ok {
					return nil, formatErr(fmt.Sprintf("%s.single[%d]", where, i), "special token %q is not in special_tokens", it.SpecialToken.ID)
				}
				ids := make([]int32, 0, len(st.IDs))
				for _, id := range st.IDs {
					if id < 0 || id > 1<<31-1 {
						return nil, formatErr(where+".special_tokens", "id %d out of range", id)
					}
					ids = append(ids, int32(id))
				}
				tp.items = append(tp.items, templateItem{ids: ids})
			default:
				return nil, formatErr(fmt.Sprintf("%s.single[%d]", where, i), "neither Sequence nor SpecialToken")
			}
		}
		return tp, nil
	case "BertProcessing", "RobertaProcessing":
		var v struct {
			Sep []json.RawMessage `json:"sep"`
			Cls []json.RawMessage `json:"cls"`
		}
		if err := unmarshalAt(m, where, &v); err != nil {
			return nil, err
		}
		cls, err := pairID(v.Cls, where+".cls")
		if err != nil {
			return nil, err
		}
		sep, err := pairID(v.Sep, where+".sep")
		if err != nil {
			return nil, err
		}
		return &templatePost{items: []templateItem{{ids: []int32{cls}}, {seq: true}, {ids: []int32{sep}}}}, nil
	}
	return nil, &UnsupportedError{Component: where, Type: typ}
}

// pairID reads the id of a ["[CLS]", 101] pair.
func pairID(p []json.RawMessage, where string) (int32, error) {
	if len(p) != 2 {
		return 0, formatErr(where, "want [token, id]")
	}
	var id int64
	if err := json.Unmarshal(p[1], &id); err != nil || id < 0 || id > 1<<31-1 {
		return 0, formatErr(where, "bad id %s", p[1])
	}
	return int32(id), nil
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

// sequenceItems returns the items of a Sequence component's list field
// ("normalizers", "pretokenizers", "decoders", "processors") with the JSON
// path of each, for errors.
func sequenceItems(m json.RawMessage, where, field string) ([]json.RawMessage, []string, error) {
	var v map[string]json.RawMessage
	if err := unmarshalAt(m, where, &v); err != nil {
		return nil, nil, err
	}
	var items []json.RawMessage
	if raw, ok := v[field]; ok && !isNull(raw) {
		if err := unmarshalAt(raw, where+"."+field, &items); err != nil {
			return nil, nil, err
		}
	}
	paths := make([]string, len(items))
	for i := range items {
		paths[i] = fmt.Sprintf("%s.%s[%d]", where, field, i)
	}
	return items, paths, nil
}

// parseSequence parses each item of a Sequence component's list field with
// parse and returns the results in order, leaving out the items that parse
// to nil (components that do nothing).
func parseSequence[T any](m json.RawMessage, where, field string, parse func(json.RawMessage, string) (T, error)) ([]T, error) {
	subs, paths, err := sequenceItems(m, where, field)
	if err != nil {
		return nil, err
	}
	var seq []T
	for i, sub := range subs {
		x, err := parse(sub, paths[i])
		if err != nil {
			return nil, err
		}
		if any(x) != nil {
			seq = append(seq, x)
		}
	}
	return seq, nil
}

// unmarshalAt is json.Unmarshal with its error reported as a FormatError
// at where.
func unmarshalAt(m json.RawMessage, where string, v any) error {
	if err := json.Unmarshal(m, v); err != nil {
		return formatErr(where, "%w", err)
	}
	return nil
}
