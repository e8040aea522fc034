// The pipeline of tokenizer.json: its normalizer, pre-tokenizer, decoder
// and post-processor components, each parsed into its step.

package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

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
