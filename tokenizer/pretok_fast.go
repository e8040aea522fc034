package tokenizer

import "unicode/utf8"

// Hand-written scanners for the pre-tokenizer regexes of GPT-2 (patGPT2)
// and Llama 3 / Qwen2 (patLlama3, patQwen2). Each returns exactly the
// matches Oniguruma's leftmost-first alternation gives: at each position the
// alternatives are tried in order and the first that matches wins. Every
// character is matched by some alternative, so matches tile the string.
// fuzz_test.go checks them against regexp2 running the same patterns.

// next decodes the rune at s[i:].
func next(s string, i int) (rune, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// runOf returns the end of the run of characters of class cls from i.
func runOf(s string, i int, cls uint8) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiClass[c] != cls {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if classOf(r) != cls {
			return i
		}
		i += n
	}
	return i
}

// spaceEnd handles `\s+(?!\S)|\s+` at i (s[i] is whitespace): the whole
// whitespace run if it reaches the end of s or is one character, else the
// run less its last character (which then prefixes the next word).
func spaceEnd(s string, i int) int {
	j, last := i, i
	for j < len(s) {
		r, n := next(s, j)
		if classOf(r) != clsSpace {
			break
		}
		last = j
		j += n
	}
	if j == len(s) || last == i {
		return j
	}
	return last
}

type gpt2Matcher struct{}

func (gpt2Matcher) appendMatches(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := gpt2End(s, i)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

// gpt2End returns the end of the match of patGPT2 starting at i.
func gpt2End(s string, i int) int {
	r, n := next(s, i)
	if r == '\'' && i+1 < len(s) { // 's|'t|'re|'ve|'m|'ll|'d
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	if r == ' ' && i+1 < len(s) { // ` ?X+` with the space
		r2, n2 := next(s, i+1)
		if c2 := classOf(r2); c2 != clsSpace {
			return runOf(s, i+1+n2, c2)
		}
	}
	if c := classOf(r); c != clsSpace { // \p{L}+ | \p{N}+ | [^\s\p{L}\p{N}]+
		return runOf(s, i+n, c)
	}
	return spaceEnd(s, i)
}

// llama3Matcher is patLlama3 (maxDigits 3) or patQwen2 (maxDigits 1).
type llama3Matcher struct{ maxDigits int }

func (m llama3Matcher) appendMatches(dst []span, s string) []span {
	for i := 0; i < len(s); {
		e := m.end(s, i)
		dst = append(dst, span{i, e})
		i = e
	}
	return dst
}

func (m llama3Matcher) end(s string, i int) int {
	r, n := next(s, i)
	if r == '\'' { // (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if k := contraction(s, i+1); k > 0 {
			return i + 1 + k
		}
	}
	c := classOf(r)
	if c == clsLetter { // \p{L}+ (the optional prefix left empty)
		return runOf(s, i+n, clsLetter)
	}
	if c != clsNumber && r != '\r' && r != '\n' && i+n < len(s) { // [^\r\n\p{L}\p{N}]\p{L}+
		if r2, n2 := next(s, i+n); classOf(r2) == clsLetter {
			return runOf(s, i+n+n2, clsLetter)
		}
	}
	if c == clsNumber { // \p{N}{1,maxDigits}
		j := i + n
		for k := 1; k < m.maxDigits && j < len(s); k++ {
			r2, n2 := next(s, j)
			if classOf(r2) != clsNumber {
				break
			}
			j += n2
		}
		return j
	}
	if r == ' ' && i+1 < len(s) { // ` [^\s\p{L}\p{N}]+[\r\n]*`
		if r2, n2 := next(s, i+1); classOf(r2) == 0 {
			return crlfRun(s, runOf(s, i+1+n2, 0))
		}
	}
	if c == 0 { // [^\s\p{L}\p{N}]+[\r\n]*
		return crlfRun(s, runOf(s, i+n, 0))
	}
	// \s*[\r\n]+: up to and including the last \r or \n of the whitespace run.
	lastNL := -1
	for j := i; j < len(s); {
		r2, n2 := next(s, j)
		if classOf(r2) != clsSpace {
			break
		}
		if r2 == '\r' || r2 == '\n' {
			lastNL = j
		}
		j += n2
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	return spaceEnd(s, i)
}

// crlfRun returns the end of the run of '\r' and '\n' from i.
func crlfRun(s string, i int) int {
	for i < len(s) && (s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

// contraction returns the byte length of a case-insensitive s|t|re|ve|m|ll|d
// at s[i:], 0 if none. Oniguruma folds case by Unicode: 'ſ' (U+017F) is an s.
func contraction(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	r, n := next(s, i)
	switch r {
	case 's', 'S', 'ſ', 't', 'T', 'm', 'M', 'd', 'D':
		return n
	case 'r', 'R', 'v', 'V':
		if i+n < len(s) && (s[i+n] == 'e' || s[i+n] == 'E') {
			return n + 1
		}
	case 'l', 'L':
		if i+n < len(s) && (s[i+n] == 'l' || s[i+n] == 'L') {
			return n + 1
		}
	}
	return 0
}
