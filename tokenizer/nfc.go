package tokenizer

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// Unicode normalization forms as tokenizers computes them. Its normalizer
// (unicode-normalization-alignments) uses older Unicode data than Go's
// x/text/unicode/norm, which moreover inserts U+034F after 30 combining
// marks and mis-composes some supplementary characters; so decomposition,
// canonical ordering and composition are done here (UAX #15) on tables made
// from tokenizers itself (unicode_tables.go). x/text only serves as a quick
// check: text it finds already normalized is normalized for tokenizers too
// (its data is a superset).

type normForm uint8

const (
	formNFC normForm = iota
	formNFD
	formNFKC
	formNFKD
)

var goForms = [...]norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD}

type normTables struct {
	ccc     []cccRange
	canon   map[rune][]rune // one-level canonical mappings
	compat  map[rune][]rune // one-level compatibility mappings
	compose map[uint64]rune // primary composites by (first<<32 | second)
}

type cccRange struct {
	lo, hi rune
	ccc    uint8
}

var (
	normOnce sync.Once
	normTab  *normTables
)

func tables() *normTables {
	normOnce.Do(func() {
		t := &normTables{canon: map[rune][]rune{}, compat: map[rune][]rune{}, compose: map[uint64]rune{}}
		for _, f := range strings.Split(cccRanges, ",") {
			rg, v, _ := strings.Cut(f, ":")
			lo, hi := parseRange(rg)
			c, err := strconv.Atoi(v)
			if err != nil {
				panic("tokenizer: bad generated table entry " + f)
			}
			t.ccc = append(t.ccc, cccRange{lo, hi, uint8(c)})
		}
		sort.Slice(t.ccc, func(i, j int) bool { return t.ccc[i].lo < t.ccc[j].lo })
		excl := map[rune]bool{}
		for _, f := range strings.Split(compositionExclusions, ",") {
			r, _ := parseRange(f)
			excl[r] = true
		}
		for _, e := range strings.Split(decompositions, ";") {
			compat := strings.HasPrefix(e, "~")
			cp, m, _ := strings.Cut(strings.TrimPrefix(e, "~"), ":")
			r, _ := parseRange(cp)
			var seq []rune
			for _, x := range strings.Fields(m) {
				v, _ := parseRange(x)
				seq = append(seq, v)
			}
			if compat {
				t.compat[r] = seq
				continue
			}
			t.canon[r] = seq
			if len(seq) == 2 && !excl[r] {
				t.compose[uint64(seq[0])<<32|uint64(seq[1])] = r
			}
		}
		normTab = t
	})
	return normTab
}

func (t *normTables) cccOf(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	i := sort.Search(len(t.ccc), func(i int) bool { return t.ccc[i].hi >= r })
	if i < len(t.ccc) && t.ccc[i].lo <= r {
		return t.ccc[i].ccc
	}
	return 0
}

// Hangul syllable arithmetic (Unicode §3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

// decompose appends the full decomposition of r.
func (t *normTables) decompose(dst []rune, r rune, compat bool) []rune {
	if s := r - hangulSBase; s >= 0 && s < hangulSCount {
		dst = append(dst, hangulLBase+s/hangulNCount, hangulVBase+(s%hangulNCount)/hangulTCount)
		if tt := s % hangulTCount; tt != 0 {
			dst = append(dst, hangulTBase+tt)
		}
		return dst
	}
	m, ok := t.canon[r]
	if !ok && compat {
		m, ok = t.compat[r]
	}
	if !ok {
		return append(dst, r)
	}
	for _, x := range m {
		dst = t.decompose(dst, x, compat)
	}
	return dst
}

// normalizeForm returns s in the given form.
func normalizeForm(s string, f normForm) string {
	if goForms[f].IsNormalString(s) {
		return s
	}
	t := tables()
	compat := f == formNFKC || f == formNFKD
	rs := make([]rune, 0, len(s)+8)
	for _, r := range s {
		rs = t.decompose(rs, r, compat)
	}
	// Canonical ordering: stable sort of each run of non-starters by class.
	for i := 0; i < len(rs); {
		if t.cccOf(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && t.cccOf(rs[j]) != 0 {
			j++
		}
		run := rs[i:j]
		sort.SliceStable(run, func(a, b int) bool { return t.cccOf(run[a]) < t.cccOf(run[b]) })
		i = j
	}
	if f == formNFC || f == formNFKC {
		rs = t.composeAll(rs)
	}
	return string(rs)
}

// composeAll is the canonical composition algorithm, in place.
func (t *normTables) composeAll(rs []rune) []rune {
	out := rs[:0]
	starter := -1 // index in out of the last starter
	for _, c := range rs {
		cc := t.cccOf(c)
		if starter >= 0 {
			last := len(out) - 1
			adjacent := last == starter
			if adjacent || (t.cccOf(out[last]) != 0 && t.cccOf(out[last]) < cc) {
				if p, ok := t.composePair(out[starter], c); ok {
					out[starter] = p
					continue
				}
			}
		}
		if cc == 0 {
			starter = len(out)
		}
		out = append(out, c)
	}
	return out
}

func (t *normTables) composePair(a, b rune) (rune, bool) {
	if l := a - hangulLBase; l >= 0 && l < hangulLCount {
		if v := b - hangulVBase; v >= 0 && v < hangulVCount {
			return hangulSBase + (l*hangulVCount+v)*hangulTCount, true
		}
	}
	if s := a - hangulSBase; s >= 0 && s < hangulSCount && s%hangulTCount == 0 {
		if tt := b - hangulTBase; tt > 0 && tt < hangulTCount {
			return a + tt, true
		}
	}
	p, ok := t.compose[uint64(a)<<32|uint64(b)]
	return p, ok
}
