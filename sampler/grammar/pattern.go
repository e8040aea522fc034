package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// A pattern (the subset described in jsonschema.go) compiles to a DFA
// over the code points a string may hold unescaped: U+0020 and above,
// less '"', '\', U+007F and the surrogates. Code points are grouped in
// symbols (intervals no class splits); every state can reach an accepting
// one (dead states are removed), so a string on the DFA can always be
// finished.
type dfa struct {
	starts []rune    // starts[i]: first code point of symbol i
	live   []bool    // symbol i is in the alphabet
	size   []int     // UTF-8 length of symbol i's first code point
	next   [][]int32 // next[state][symbol]; -1: refused
	accept []bool    // per state
	dist   []int     // bytes of the shortest way to an accepting state
}

type rrange struct{ lo, hi rune }

// element is one atom of a pattern with its quantifier.
type element struct {
	class []rrange
	rep   byte // '1' once, '?' optional, '*' any number
}

var (
	digit = []rrange{{'0', '9'}}
	word  = []rrange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	// \s is the white space every engine agrees on (RE2's, within
	// ECMA-262's); \S the complement of ECMA-262's, within RE2's.
	space     = []rrange{{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}}
	ecmaSpace = []rrange{{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
		{0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}}
	anyRune = []rrange{{0, utf8.MaxRune}}
	dot     = negate([]rrange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})
	// alphabet is what a pattern string may hold.
	alphabet = negate([]rrange{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}, {0xD800, 0xDFFF}})
)

func negate(c []rrange) []rrange {
	c = normalize(c)
	var out []rrange
	next := rune(0)
	for _, r := range c {
		if r.lo > next {
			out = append(out, rrange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= utf8.MaxRune {
		out = append(out, rrange{next, utf8.MaxRune})
	}
	return out
}

func normalize(c []rrange) []rrange {
	c = slices.Clone(c)
	slices.SortFunc(c, func(a, b rrange) int { return int(a.lo - b.lo) })
	var out []rrange
	for _, r := range c {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func inClass(c []rrange, r rune) bool {
	for _, x := range c {
		if r >= x.lo && r <= x.hi {
			return true
		}
	}
	return false
}

var errPattern = errors.New("bad pattern")

// parsePattern reads the pattern's elements, anchors applied.
func parsePattern(src string) ([]element, error) {
	rs := []rune(src)
	startAnchor := len(rs) > 0 && rs[0] == '^'
	if startAnchor {
		rs = rs[1:]
	}
	endAnchor := len(rs) > 0 && rs[len(rs)-1] == '$' && (len(rs) < 2 || rs[len(rs)-2] != '\\')
	if endAnchor {
		rs = rs[:len(rs)-1]
	}
	var els []element
	if !startAnchor {
		els = append(els, element{anyRune, '*'})
	}
	for i := 0; i < len(rs); {
		var class []rrange
		switch c := rs[i]; c {
		case '(', ')', '|':
			return nil, fmt.Errorf("%w: groups and alternation (%q) are not supported", errPattern, c)
		case '*', '+', '?', '{', '}':
			return nil, fmt.Errorf("%w: quantifier %q without an atom", errPattern, c)
		case '^', '$':
			return nil, fmt.Errorf("%w: %q inside the pattern is not supported", errPattern, c)
		case '.':
			class, i = dot, i+1
		case '[':
			var err error
			if class, i, err = parseClass(rs, i+1); err != nil {
				return nil, err
			}
		case '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("%w: trailing backslash", errPattern)
			}
			var err error
			if class, err = escapeClass(rs[i+1]); err != nil {
				return nil, err
			}
			i += 2
		default:
			class, i = []rrange{{c, c}}, i+1
		}
		lo, hi := 1, 1
		if i < len(rs) {
			switch rs[i] {
			case '?':
				lo, hi, i = 0, 1, i+1
			case '*':
				lo, hi, i = 0, -1, i+1
			case '+':
				lo, hi, i = 1, -1, i+1
			case '{':
				j := slices.Index(rs[i:], '}')
				if j < 0 {
					return nil, fmt.Errorf("%w: unclosed {", errPattern)
				}
				var err error
				if lo, hi, err = parseRepeat(string(rs[i+1 : i+j])); err != nil {
					return nil, err
				}
				i += j + 1
			}
			if i < len(rs) && rs[i] == '?' { // lazy: the same language
				i++
			}
		}
		if len(els)+max(lo, hi) > maxPatternAtoms {
			return nil, fmt.Errorf("%w: more than %d atoms once repeats are expanded", errPattern, maxPatternAtoms)
		}
		for range lo {
			els = append(els, element{class, '1'})
		}
		if hi < 0 {
			els = append(els, element{class, '*'})
		}
		for range hi - lo {
			els = append(els, element{class, '?'})
		}
	}
	if !endAnchor {
		els = append(els, element{anyRune, '*'})
	}
	return els, nil
}

func parseRepeat(s string) (lo, hi int, err error) {
	bad := fmt.Errorf("%w: bad repeat {%s}", errPattern, s)
	a, b, comma := s, s, false
	if j := slices.Index([]byte(s), ','); j >= 0 {
		a, b, comma = s[:j], s[j+1:], true
	}
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 || lo > maxPatternAtoms {
		return 0, 0, bad
	}
	hi = lo
	if comma {
		hi = -1
		if b != "" {
			if hi, err = strconv.Atoi(b); err != nil || hi < lo || hi > maxPatternAtoms {
				return 0, 0, bad
			}
		}
	}
	return lo, hi, nil
}

// escapeClass is the class of escape \c; wide asks for the widest
// reading of \s and \S (inside a negated class, where the complement
// must be the narrowest).
func escapeClass(c rune, wide ...bool) ([]rrange, error) {
	w := len(wide) > 0 && wide[0]
	switch c {
	case 'd':
		return digit, nil
	case 'D':
		return negate(digit), nil
	case 'w':
		return word, nil
	case 'W':
		return negate(word), nil
	case 's':
		if w {
			return ecmaSpace, nil
		}
		return space, nil
	case 'S':
		if w {
			return negate(space), nil
		}
		return negate(ecmaSpace), nil
	case 'n':
		return []rrange{{'\n', '\n'}}, nil
	case 't':
		return []rrange{{'\t', '\t'}}, nil
	case 'r':
		return []rrange{{'\r', '\r'}}, nil
	}
	if c < 0x80 && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
		return []rrange{{c, c}}, nil
	}
	return nil, fmt.Errorf("%w: escape \\%c is not supported", errPattern, c)
}

// parseClass reads a [...] class from rs[i:] (after '[').
func parseClass(rs []rune, i int) ([]rrange, int, error) {
	neg := i < len(rs) && rs[i] == '^'
	if neg {
		i++
	}
	var out []rrange
	first := true
	for {
		if i >= len(rs) {
			return nil, 0, fmt.Errorf("%w: unclosed [", errPattern)
		}
		c := rs[i]
		if c == ']' && !first {
			i++
			break
		}
		first = false
		var lo rune
		if c == '\\' {
			if i+1 >= len(rs) {
				return nil, 0, fmt.Errorf("%w: trailing backslash", errPattern)
			}
			cl, err := escapeClass(rs[i+1], neg)
			if err != nil {
				return nil, 0, err
			}
			i += 2
			if len(cl) != 1 || cl[0].lo != cl[0].hi {
				out = append(out, cl...)
				continue
			}
			lo = cl[0].lo
		} else {
			lo, i = c, i+1
		}
		hi := lo
		if i+1 < len(rs) && rs[i] == '-' && rs[i+1] != ']' {
			hi = rs[i+1]
			i += 2
			if hi == '\\' {
				if i >= len(rs) {
					return nil, 0, fmt.Errorf("%w: trailing backslash", errPattern)
				}
				cl, err := escapeClass(rs[i])
				if err != nil || len(cl) != 1 || cl[0].lo != cl[0].hi {
					return nil, 0, fmt.Errorf("%w: bad range end", errPattern)
				}
				hi, i = cl[0].lo, i+1
			}
			if hi < lo {
				return nil, 0, fmt.Errorf("%w: range %c-%c out of order", errPattern, lo, hi)
			}
		}
		out = append(out, rrange{lo, hi})
	}
	if neg {
		return negate(out), i, nil
	}
	return normalize(out), i, nil
}

// compilePattern builds the DFA of src.
func compilePattern(src string) (*dfa, error) {
	els, err := parsePattern(src)
	if err != nil {
		return nil, err
	}
	// Symbols: the intervals between every class boundary.
	bounds := []rune{0}
	for _, cl := range append([][]rrange{alphabet}, classesOf(els)...) {
		for _, r := range cl {
			bounds = append(bounds, r.lo, r.hi+1)
		}
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	if bounds[len(bounds)-1] > utf8.MaxRune {
		bounds = bounds[:len(bounds)-1]
	}
	d := &dfa{starts: bounds}
	nsym := len(bounds)
	member := make([][]bool, len(els))
	for i, e := range els {
		member[i] = make([]bool, nsym)
		for s, r := range bounds {
			member[i][s] = inClass(e.class, r)
		}
	}
	d.live = make([]bool, nsym)
	d.size = make([]int, nsym)
	for s, r := range bounds {
		d.live[s] = inClass(alphabet, r)
		d.size[s] = max(utf8.RuneLen(r), 1)
	}
	P := len(els)
	closure := func(set []bool) []bool {
		for i := 0; i < P; i++ {
			if set[i] && els[i].rep != '1' {
				set[i+1] = true
			}
		}
		return set
	}
	key := func(set []bool) string {
		b := make([]byte, len(set))
		for i, x := range set {
			if x {
				b[i] = 1
			}
		}
		return string(b)
	}
	start := make([]bool, P+1)
	start[0] = true
	sets := [][]bool{closure(start)}
	index := map[string]int{key(sets[0]): 0}
	for q := 0; q < len(sets); q++ {
		row := make([]int32, nsym)
		for s := range nsym {
			row[s] = -1
			if !d.live[s] {
				continue
			}
			nx := make([]bool, P+1)
			any := false
			for i := range P {
				if sets[q][i] && member[i][s] {
					any = true
					if els[i].rep == '*' {
						nx[i] = true
					} else {
						nx[i+1] = true
					}
				}
			}
			if !any {
				continue
			}
			k := key(closure(nx))
			t, ok := index[k]
			if !ok {
				if len(sets) == maxPatternDFA {
					return nil, fmt.Errorf("%w: more than %d DFA states", errPattern, maxPatternDFA)
				}
				t = len(sets)
				index[k] = t
				sets = append(sets, nx)
			}
			row[s] = int32(t)
		}
		d.next = append(d.next, row)
		d.accept = append(d.accept, sets[q][P])
	}
	// Shortest way to an accepting state; states without one are dead.
	n := len(sets)
	d.dist = make([]int, n)
	for q := range n {
		d.dist[q] = inf
		if d.accept[q] {
			d.dist[q] = 0
		}
	}
	for changed := true; changed; {
		changed = false
		for q := range n {
			for s, t := range d.next[q] {
				if t >= 0 && d.dist[t] < inf && d.size[s]+d.dist[t] < d.dist[q] {
					d.dist[q], changed = d.size[s]+d.dist[t], true
				}
			}
		}
	}
	if d.dist[0] >= inf {
		return nil, fmt.Errorf("%w: %q matches no string a JSON string can hold unescaped", errPattern, src)
	}
	for q := range n {
		for s, t := range d.next[q] {
			if t >= 0 && d.dist[t] >= inf {
				d.next[q][s] = -1
			}
		}
	}
	return d, nil
}

func classesOf(els []element) [][]rrange {
	out := make([][]rrange, len(els))
	for i, e := range els {
		out[i] = e.class
	}
	return out
}

// step is the state after code point r from q; -1: refused.
func (d *dfa) step(q int32, r rune) int32 {
	s, found := slices.BinarySearch(d.starts, r)
	if !found {
		s--
	}
	return d.next[q][s]
}

func (d *dfa) maxDist() int {
	m := 0
	for _, x := range d.dist {
		if x < inf {
			m = max(m, x)
		}
	}
	return m
}
