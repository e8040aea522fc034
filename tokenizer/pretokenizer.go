package tokenizer

import "strings"

// piece is one split of the input as it flows through the pipeline.
type piece struct {
	s string
	// atStart: the piece begins at byte 0 of the text given to Encode
	// (Metaspace's prepend_scheme "first" needs it).
	atStart bool
}

// preTokenizer splits one piece into the pieces ("words") the model sees,
// appending them to dst. A "Sequence" is flattened into a list at load time:
// each step splits every piece the previous one produced.
type preTokenizer interface {
	split(sp *splitter, dst []piece, p piece) []piece
}

// splitPre is "Split": a regex or string pattern with a behavior.
type splitPre struct {
	m      matcher
	beh    behavior
	invert bool
}

func (s *splitPre) split(sp *splitter, dst []piece, p piece) []piece {
	return sp.split(dst, p, s.m, s.beh, s.invert)
}

// byteLevelPre is "ByteLevel": an optional leading space, the GPT-2 regex
// split (use_regex), then every byte mapped to the byte-level alphabet. When
// it is the last step and the model is byte-level, rawOut leaves the bytes
// unmapped: the BPE model maps bytes to ids itself (bpe.rawBytes).
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
	rawOut         bool
}

func (b *byteLevelPre) split(sp *splitter, dst []piece, p piece) []piece {
	if b.addPrefixSpace && !strings.HasPrefix(p.s, " ") {
		p.s = " " + p.s
	}
	n := len(dst)
	if b.useRegex {
		dst = sp.split(dst, p, gpt2Matcher{}, behIsolated, false)
	} else if p.s != "" {
		dst = append(dst, p)
	}
	if !b.rawOut {
		for i := n; i < len(dst); i++ {
			dst[i].s = byteLevelEncode(dst[i].s)
		}
	}
	return dst
}

// prependScheme is Metaspace's rule for adding the replacement in front.
type prependScheme uint8

const (
	prependAlways prependScheme = iota
	prependFirst                // only for the piece at the start of the input
	prependNever
)

// metaspacePre is "Metaspace": spaces become the replacement (usually '▁'),
// one is prepended per the scheme, then (split) the text is cut before each
// replacement.
type metaspacePre struct {
	replacement rune
	repl        string
	scheme      prependScheme
	splitOn     bool
}

func (m *metaspacePre) split(sp *splitter, dst []piece, p piece) []piece {
	s := strings.ReplaceAll(p.s, " ", m.repl)
	if !strings.HasPrefix(s, m.repl) {
		if m.scheme == prependAlways || (m.scheme == prependFirst && p.atStart) {
			s = m.repl + s
		}
	}
	p.s = s
	if !m.splitOn {
		if s != "" {
			dst = append(dst, p)
		}
		return dst
	}
	r := m.replacement
	return sp.split(dst, p, runeMatcher(func(c rune) bool { return c == r }), behMergedWithNext, false)
}

// digitsPre is "Digits": numeric characters split off, one by one
// (individual) or in runs.
type digitsPre struct{ individual bool }

func (d *digitsPre) split(sp *splitter, dst []piece, p piece) []piece {
	beh := behContiguous
	if d.individual {
		beh = behIsolated
	}
	return sp.split(dst, p, runeMatcher(isNumeric), beh, false)
}
