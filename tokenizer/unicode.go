package tokenizer

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Character classes as tokenizers sees them. Its regex engine (Oniguruma)
// knows Unicode 16.0 letters and digits, Go's unicode package 15.0, so \p{L}
// and \p{N} come from letterRanges/numberRanges (unicode_tables.go, made by
// probing tokenizers). \s is the White_Space property in both.

const (
	clsLetter uint8 = 1 << iota // \p{L}
	clsNumber                   // \p{N}
	clsSpace                    // \s: the White_Space property
)

var (
	// bmpClass[r] is classOf(r) for the Basic Multilingual Plane.
	bmpClass [0x10000]uint8
	// suppRanges are the letter and number ranges above U+FFFF, sorted.
	suppRanges []classRange
)

type classRange struct {
	lo, hi rune
	cls    uint8
}

func init() {
	var all []classRange
	for _, t := range []struct {
		s   string
		cls uint8
	}{{letterRanges, clsLetter}, {numberRanges, clsNumber}} {
		for _, f := range strings.Split(t.s, ",") {
			lo, hi := parseRange(f)
			all = append(all, classRange{lo, hi, t.cls})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].lo < all[j].lo })
	for _, cr := range all {
		for r := cr.lo; r <= cr.hi && r < 0x10000; r++ {
			bmpClass[r] = cr.cls
		}
		if cr.hi >= 0x10000 {
			cr.lo = max(cr.lo, 0x10000)
			suppRanges = append(suppRanges, cr)
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		if isWhiteSpace(r) {
			bmpClass[r] = clsSpace
		}
	}
}

// parseRange parses "41-5A" or "AA" (hex).
func parseRange(f string) (rune, rune) {
	a, b, ok := strings.Cut(f, "-")
	lo, err := strconv.ParseUint(a, 16, 32)
	if err != nil {
		panic("tokenizer: bad generated table entry " + f)
	}
	hi := lo
	if ok {
		if hi, err = strconv.ParseUint(b, 16, 32); err != nil {
			panic("tokenizer: bad generated table entry " + f)
		}
	}
	return rune(lo), rune(hi)
}

// classOf returns the class bits of r (0 for "other": punctuation, symbols,
// marks, controls, unassigned…).
func classOf(r rune) uint8 {
	if r < 0x10000 {
		return bmpClass[r]
	}
	i := sort.Search(len(suppRanges), func(i int) bool { return suppRanges[i].hi >= r })
	if i < len(suppRanges) && suppRanges[i].lo <= r {
		return suppRanges[i].cls
	}
	return 0 // no supplementary character is White_Space
}

// asciiClass is classOf for ASCII, for the scanners' inner loops.
var asciiClass = func() (t [128]uint8) {
	for c := range t {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = clsLetter
		case c >= '0' && c <= '9':
			t[c] = clsNumber
		case c == ' ', c >= '\t' && c <= '\r':
			t[c] = clsSpace
		}
	}
	return
}()

// isWhiteSpace is the Unicode White_Space property (Oniguruma's \s, Rust's
// char::is_whitespace and regex \s).
func isWhiteSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0:
		return true
	}
	return r >= 0x1680 && unicode.Is(unicode.White_Space, r)
}

// isNumeric is Rust's char::is_numeric (general category N), with
// tokenizers' Unicode version.
func isNumeric(r rune) bool {
	if r < 128 {
		return r >= '0' && r <= '9'
	}
	return classOf(r) == clsNumber
}

// isRustWord is Rust regex's Unicode \w (Alphabetic, marks, Nd, Pc,
// Join_Control). The numbers new since Go's Unicode 15.0 are all Nd.
func isRustWord(r rune) bool {
	if r < 128 {
		return r == '_' || asciiClass[r]&(clsLetter|clsNumber) != 0
	}
	switch classOf(r) {
	case clsLetter:
		return true
	case clsNumber:
		return unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Nl, r) || !unicode.IsNumber(r)
	}
	return unicode.Is(unicode.Other_Alphabetic, r) || unicode.IsMark(r) ||
		unicode.Is(unicode.Pc, r) || unicode.Is(unicode.Join_Control, r)
}
