package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a half-open byte range [start, end) of a string.
type span struct{ start, end int }

// matcher finds the non-overlapping matches of a pattern in a string, left to
// right, as byte spans. It is the Pattern of tokenizers' pattern.rs.
type matcher interface {
	appendMatches(dst []span, s string) []span
}

// The pre-tokenizer regexes of the common model families have hand-written
// scanners (pretok_fast.go); any other regex runs on regexp2.
const (
	// GPT-2's, used by ByteLevel(use_regex=true).
	patGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// Llama 3's (tiktoken cl100k-like): numbers in runs of up to 3 digits.
	patLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// Qwen2/Qwen3's: as Llama 3's but one digit per piece.
	patQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// compileRegex returns a matcher for an Oniguruma regex from a tokenizer
// file: a fast scanner for the known ones, else regexp2.
func compileRegex(pat string) (matcher, error) {
	switch pat {
	case patGPT2:
		return gpt2Matcher{}, nil
	case patLlama3:
		return llama3Matcher{maxDigits: 3}, nil
	case patQwen2:
		return llama3Matcher{maxDigits: 1}, nil
	}
	return compileRegexp2(pat)
}

// regexMatcher runs a regex on regexp2. regexp2 reports rune indices; they
// are mapped back to byte offsets.
type regexMatcher struct {
	re *regexp2.Regexp
}

func compileRegexp2(pat string) (*regexMatcher, error) {
	// Oniguruma's default (Ruby) syntax makes ^ and $ line anchors, which is
	// regexp2's Multiline. \s, \p{L}, \p{N} mean the same in both.
	re, err := regexp2.Compile(pat, regexp2.Multiline)
	if err != nil {
		return nil, fmt.Errorf("regex %q: %w", pat, err)
	}
	return &regexMatcher{re: re}, nil
}

func (m *regexMatcher) appendMatches(dst []span, s string) []span {
	if s == "" {
		return dst
	}
	runes := []rune(s)
	// off[i] is the byte offset of rune i; off[len(runes)] = len(s).
	off := make([]int, len(runes)+1)
	b := 0
	for i, r := range runes {
		off[i] = b
		b += utf8.RuneLen(r)
	}
	off[len(runes)] = b
	mt, err := m.re.FindRunesMatch(runes)
	for err == nil && mt != nil {
		dst = append(dst, span{off[mt.Index], off[mt.Index+mt.Length]})
		mt, err = m.re.FindNextMatch(mt)
	}
	// regexp2 only errs on a timeout, and none is set.
	return dst
}

// literalMatcher matches a plain string (a "String" pattern).
type literalMatcher string

func (m literalMatcher) appendMatches(dst []span, s string) []span {
	if m == "" {
		return dst
	}
	for i := 0; ; {
		k := strings.Index(s[i:], string(m))
		if k < 0 {
			return dst
		}
		dst = append(dst, span{i + k, i + k + len(m)})
		i += k + len(m)
	}
}

// runeMatcher matches every single character for which f is true.
type runeMatcher func(rune) bool

func (m runeMatcher) appendMatches(dst []span, s string) []span {
	for i, r := range s {
		if m(r) {
			dst = append(dst, span{i, i + utf8.RuneLen(r)})
		}
	}
	return dst
}

// behavior is tokenizers' SplitDelimiterBehavior: what becomes of a match
// when a string is split by a pattern.
type behavior uint8

const (
	behRemoved            behavior = iota // drop the matches
	behIsolated                           // each match is its own piece
	behMergedWithPrevious                 // a match joins the piece before it
	behMergedWithNext                     // a match joins the piece after it
	behContiguous                         // consecutive matches form one piece
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Removed":
		return behRemoved, nil
	case "Isolated":
		return behIsolated, nil
	case "MergedWithPrevious":
		return behMergedWithPrevious, nil
	case "MergedWithNext":
		return behMergedWithNext, nil
	case "Contiguous":
		return behContiguous, nil
	}
	return 0, &UnsupportedError{Component: "split behavior", Type: s}
}

// mark is a piece of a split: its span and whether it was a match.
type mark struct {
	span
	match bool
}

// splitter holds scratch buffers for splitting; one per Encode call.
type splitter struct {
	spans []span
	marks []mark
	out   []mark
}

// split cuts p by m's matches (inverted if invert: the matches become the
// kept text) with behavior beh, appending the non-empty pieces to dst
// (tokenizers' NormalizedString::split + PreTokenizedString::split).
func (sp *splitter) split(dst []piece, p piece, m matcher, beh behavior, invert bool) []piece {
	s := p.s
	if s == "" {
		return dst
	}
	sp.spans = m.appendMatches(sp.spans[:0], s)
	if beh == behIsolated { // the common case: every match and gap is a piece
		prev := 0
		for _, sm := range sp.spans {
			if sm.start > prev {
				dst = append(dst, piece{s: s[prev:sm.start], atStart: p.atStart && prev == 0})
			}
			if sm.end > sm.start {
				dst = append(dst, piece{s: s[sm.start:sm.end], atStart: p.atStart && sm.start == 0})
			}
			prev = sm.end
		}
		if prev < len(s) {
			dst = append(dst, piece{s: s[prev:], atStart: p.atStart && prev == 0})
		}
		return dst
	}
	// Alternate non-match / match marks covering all of s.
	marks := sp.marks[:0]
	prev := 0
	for _, sm := range sp.spans {
		if sm.start > prev {
			marks = append(marks, mark{span{prev, sm.start}, invert})
		}
		marks = append(marks, mark{sm, !invert})
		prev = sm.end
	}
	if prev < len(s) {
		marks = append(marks, mark{span{prev, len(s)}, invert})
	}
	sp.marks = marks

	out := sp.out[:0]
	switch beh {
	case behIsolated:
		out = append(out, marks...)
	case behRemoved:
		for _, mk := range marks {
			if !mk.match {
				out = append(out, mk)
			}
		}
	case behContiguous:
		prevMatch := false
		for i, mk := range marks {
			if i > 0 && mk.match == prevMatch {
				out[len(out)-1].end = mk.end
			} else {
				out = append(out, mk)
			}
			prevMatch = mk.match
		}
	case behMergedWithPrevious:
		prevMatch := false
		for _, mk := range marks {
			if mk.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = mk.end
			} else {
				out = append(out, mk)
			}
			prevMatch = mk.match
		}
	case behMergedWithNext:
		// Walk backwards: a match joins the piece after it.
		prevMatch := false
		for i := len(marks) - 1; i >= 0; i-- {
			mk := marks[i]
			if mk.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].start = mk.start
			} else {
				out = append(out, mk)
			}
			prevMatch = mk.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	sp.out = out
	for _, mk := range out {
		if mk.end > mk.start {
			dst = append(dst, piece{s: s[mk.start:mk.end], atStart: p.atStart && mk.start == 0})
		}
	}
	return dst
}
