package grammar

import (
	"bytes"
	"container/list"
	"slices"
	"sync"
)

// trie holds token byte strings; a node's children are contiguous and
// sorted by byte, so a walk visits each shared prefix once.
type trie struct {
	nodes []tnode // nodes[0] is the root
	toks  []int32 // the tokens ending at each node, by node
}

type tnode struct {
	b              byte
	child0, child1 int32 // children: nodes[child0:child1]
	tok0, tok1     int32 // tokens ending here: toks[tok0:tok1]
}

func buildTrie(pieces [][]byte, ids []int32) *trie {
	ids = slices.Clone(ids)
	slices.SortFunc(ids, func(a, b int32) int {
		if c := bytes.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	t := &trie{nodes: make([]tnode, 1)}
	var fill func(at int32, ids []int32, d int)
	fill = func(at int32, ids []int32, d int) {
		i := 0
		for i < len(ids) && len(pieces[ids[i]]) == d {
			i++
		}
		t.nodes[at].tok0 = int32(len(t.toks))
		t.toks = append(t.toks, ids[:i]...)
		t.nodes[at].tok1 = int32(len(t.toks))
		ids = ids[i:]
		var groups [][]int32
		for len(ids) > 0 {
			b := pieces[ids[0]][d]
			j := 1
			for j < len(ids) && pieces[ids[j]][d] == b {
				j++
			}
			groups = append(groups, ids[:j])
			ids = ids[j:]
		}
		first := int32(len(t.nodes))
		for _, g := range groups {
			t.nodes = append(t.nodes, tnode{b: pieces[g[0]][d]})
		}
		t.nodes[at].child0, t.nodes[at].child1 = first, first+int32(len(groups))
		for k, g := range groups {
			fill(first+int32(k), g, d+1)
		}
	}
	fill(0, ids, 0)
	return t
}

// schemaVocab is what a SchemaConstraint and a ToolCallConstraint need
// of a Vocab, built once.
type schemaVocab struct {
	all     *trie // every token JSON text may hold (not special, not an end)
	quote   *trie // those with a '"'
	unplain *trie // those that are not plain (Vocab.plain)
	special *trie // the special tokens that are not an end
	// inString holds the tokens that are not plain, have no '"' and that
	// a forced call's JSON string takes whole from a character boundary
	// (escapes, parts of a character), by id; inStringLex[i] is the
	// string's lexer after inString[i].
	inString    []int32
	inStringLex []strLex
	// free holds the tokens that stay inside a string without bounds or
	// pattern, read from a character boundary; chars[id] is how many
	// characters they begin.
	free     []bool
	byChars  []int32 // the free tokens by chars, ascending
	charsEnd []int   // byChars[:charsEnd[c]] begin at most c characters
	maxChars int
	masks    patternMasks
}

var freeString = &node{kind: kString, maxLen: -1, min: 2}

func (v *Vocab) schema() *schemaVocab {
	v.schemaOnce.Do(func() {
		var all, quote, unplain, special, inString []int32
		var inStringLex []strLex
		for id, b := range v.bytes {
			switch {
			case len(b) == 0 || v.end[id]:
			case v.literal[id]:
				special = append(special, int32(id))
			default:
				all = append(all, int32(id))
				q := bytes.IndexByte(b, '"') >= 0
				if q {
					quote = append(quote, int32(id))
				}
				if v.plain[id] {
					continue
				}
				unplain = append(unplain, int32(id))
				if q {
					continue
				}
				if lx, ok := stringLex(b); ok {
					inString = append(inString, int32(id))
					inStringLex = append(inStringLex, lx)
				}
			}
		}
		sv := &schemaVocab{all: buildTrie(v.bytes, all), quote: buildTrie(v.bytes, quote),
			unplain: buildTrie(v.bytes, unplain), special: buildTrie(v.bytes, special), inString: inString, inStringLex: inStringLex,
			free: make([]bool, len(v.bytes))}
		sv.masks = patternMasks{max: max(4, maskCacheBytes/max(len(v.bytes), 1)), order: list.New(), byKey: map[maskKey]*list.Element{}}
		chars := make([]int, len(v.bytes))
		for _, id := range all {
			f := frame{n: freeString, st: ssIn}
			ok := true
			for _, b := range v.bytes[id] {
				if stepString(&f, b) != rAccept {
					ok = false
					break
				}
			}
			if ok {
				sv.free[id] = true
				chars[id] = int(f.count)
				sv.byChars = append(sv.byChars, id)
				sv.maxChars = max(sv.maxChars, int(f.count))
			}
		}
		slices.SortStableFunc(sv.byChars, func(a, b int32) int { return chars[a] - chars[b] })
		sv.charsEnd = make([]int, sv.maxChars+1)
		k := 0
		for c := range sv.charsEnd {
			for k < len(sv.byChars) && chars[sv.byChars[k]] <= c {
				k++
			}
			sv.charsEnd[c] = k
		}
		v.sv = sv
	})
	return v.sv
}

// maskCacheBytes bounds the pattern masks a Vocab keeps (one byte per
// token each), the least recently used dropped first.
const maskCacheBytes = 64 << 20

type maskKey struct {
	d *dfa
	q int32
}

type maskEntry struct {
	key  maskKey
	mask []bool
}

// patternMasks caches, per pattern state, the tokens that stay inside a
// pattern string from a character boundary in that state: an LRU of at
// most maskCacheBytes, shared by every schema on the vocabulary.
type patternMasks struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *maskEntry, the most recent first
	byKey map[maskKey]*list.Element
}

// lengthMask is the tokens that stay inside a string from a character
// boundary and begin at most r characters (r < maxChars), cached in the
// same LRU as the pattern masks.
func (v *Vocab) lengthMask(r int) []bool {
	sv := v.schema()
	return sv.masks.get(maskKey{nil, int32(r)}, func() []bool {
		m := make([]bool, len(v.bytes))
		for _, id := range sv.byChars[:sv.charsEnd[r]] {
			m[id] = true
		}
		return m
	})
}

// get is the mask of k, built by build at the first call.
func (p *patternMasks) get(k maskKey, build func() []bool) []bool {
	p.mu.Lock()
	if e, ok := p.byKey[k]; ok {
		p.order.MoveToFront(e)
		p.mu.Unlock()
		return e.Value.(*maskEntry).mask
	}
	p.mu.Unlock()
	m := build()
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.byKey[k]; ok {
		return e.Value.(*maskEntry).mask
	}
	p.byKey[k] = p.order.PushFront(&maskEntry{k, m})
	for p.order.Len() > p.max {
		old := p.order.Remove(p.order.Back()).(*maskEntry)
		delete(p.byKey, old.key)
	}
	return m
}

// patternMask is the tokens that stay inside string node n (a pattern
// string) from its DFA state q.
func (v *Vocab) patternMask(n *node, q int32) []bool {
	sv := v.schema()
	return sv.masks.get(maskKey{n.pat, q}, func() []bool {
		m := make([]bool, len(v.bytes))
		var s state
		s.frames[0] = frame{st: rsValue}
		s.frames[1] = frame{n: n, st: ssIn, dfa: q}
		s.depth = 2
		w := walker{s: &s, allowed: m, local: true}
		w.walk(sv.all, 0)
		return m
	})
}

// walker tries the tokens of a trie from a state.
type walker struct {
	s       *state
	allowed []bool
	local   bool // only tokens that leave the top value unfinished (mask building)
	budget  bool
	left    int // with budget: tokens left, this one included
	some    bool
}

func (w *walker) walk(t *trie, at int32) {
	nd := t.nodes[at]
	depth := w.s.depth
	for ci := nd.child0; ci < nd.child1; ci++ {
		ch := &t.nodes[ci]
		mark, d := w.s.begin()
		if w.s.step(ch.b) && (!w.local || w.s.depth == depth) {
			if ch.tok1 > ch.tok0 && (!w.budget || w.s.completion() <= w.left-1) {
				for _, id := range t.toks[ch.tok0:ch.tok1] {
					w.allowed[id] = true
				}
				w.some = true
			}
			if ch.child1 > ch.child0 {
				w.walk(t, ci)
			}
		}
		w.s.undo(mark, d)
	}
}
