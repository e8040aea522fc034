package tokenizer

import "strings"

// normalizer rewrites one piece of text before pre-tokenization. Offsets are
// not tracked: Encode returns ids only.
type normalizer interface {
	normalize(s string) string
}

// normalizerSeq applies its normalizers in order (type "Sequence").
type normalizerSeq []normalizer

func (q normalizerSeq) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// unicodeNorm is NFC, NFD, NFKC or NFKD (nfc.go).
type unicodeNorm struct{ form normForm }

func (u unicodeNorm) normalize(s string) string { return normalizeForm(s, u.form) }

// prependNorm prepends a string to non-empty text ("Prepend").
type prependNorm string

func (p prependNorm) normalize(s string) string {
	if s == "" {
		return s
	}
	return string(p) + s
}

// replaceNorm replaces every match of a pattern by content ("Replace").
type replaceNorm struct {
	m       matcher
	content string
}

func (r replaceNorm) normalize(s string) string {
	if lm, ok := r.m.(literalMatcher); ok {
		return strings.ReplaceAll(s, string(lm), r.content)
	}
	return replaceMatches(s, r.m, r.content)
}

func replaceMatches(s string, m matcher, content string) string {
	spans := m.appendMatches(nil, s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(content)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// stripNorm trims Unicode whitespace on the left and/or right ("Strip").
type stripNorm struct{ left, right bool }

func (t stripNorm) normalize(s string) string {
	if t.left {
		s = strings.TrimLeftFunc(s, isWhiteSpace)
	}
	if t.right {
		s = strings.TrimRightFunc(s, isWhiteSpace)
	}
	return s
}
