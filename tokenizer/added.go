package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's "added_tokens": text matched
// in the input before the model runs and given its id whole.
type AddedToken struct {
	ID         int32
	Content    string
	SingleWord bool // only matched when not inside a word
	LStrip     bool // also swallows the whitespace on its left
	RStrip     bool // also swallows the whitespace on its right
	Normalized bool // matched in the normalized text (else in the raw input)
	Special    bool // a control token: skipped by Decode(…, skipSpecial=true)
}

// tokenTrie finds added tokens in text: at the leftmost position where any
// token starts, the longest one (aho-corasick's LeftmostLongest).
type tokenTrie struct {
	nodes []trieNode
	first [256]bool // bytes a token can start with
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into the pattern list + 1; 0 if no token ends here
}

func newTokenTrie(patterns []string) *tokenTrie {
	t := &tokenTrie{nodes: []trieNode{{}}}
	for pi, p := range patterns {
		if p == "" {
			continue
		}
		t.first[p[0]] = true
		n := int32(0)
		for i := 0; i < len(p); i++ {
			c := p[i]
			nx, ok := t.nodes[n].next[c]
			if !ok {
				if t.nodes[n].next == nil {
					t.nodes[n].next = map[byte]int32{}
				}
				nx = int32(len(t.nodes))
				t.nodes[n].next[c] = nx
				t.nodes = append(t.nodes, trieNode{})
			}
			n = nx
		}
		t.nodes[n].token = int32(pi) + 1
	}
	return t
}

// find returns the next match at or after from: its span and pattern index.
func (t *tokenTrie) find(s string, from int) (start, end, pat int, ok bool) {
	for i := from; i < len(s); i++ {
		if !t.first[s[i]] {
			continue
		}
		n, best, bestEnd := int32(0), int32(0), 0
		for j := i; j < len(s); j++ {
			nx, ok := t.nodes[n].next[s[j]]
			if !ok {
				break
			}
			n = nx
			if t.nodes[n].token != 0 {
				best, bestEnd = t.nodes[n].token, j+1
			}
		}
		if best != 0 {
			return i, bestEnd, int(best - 1), true
		}
	}
	return 0, 0, 0, false
}

// addedSet is one of the two matching sets of the added vocabulary: tokens
// matched on raw text, or (normalized) on normalized text.
type addedSet struct {
	trie   *tokenTrie
	tokens []*AddedToken // by pattern index
}

// segment is a part of the text: either plain text or an added token.
type segment struct {
	span
	id int32 // the added token's id, or -1 for plain text
}

// segments cuts s at the matches of the set (find_matches in tokenizers'
// added_vocabulary.rs, with its single_word, lstrip and rstrip rules).
func (a *addedSet) segments(dst []segment, s string) []segment {
	if a == nil || a.trie == nil || s == "" {
		if s != "" {
			dst = append(dst, segment{span{0, len(s)}, -1})
		}
		return dst
	}
	startOff := 0
	for from := 0; from < len(s); {
		ms, me, pi, ok := a.trie.find(s, from)
		if !ok {
			break
		}
		from = me
		tok := a.tokens[pi]
		start, stop := ms, me
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			ns := len(strings.TrimRightFunc(s[:start], isWhiteSpace))
			start = max(ns, startOff)
		}
		if tok.RStrip {
			stop += len(s[stop:]) - len(strings.TrimLeftFunc(s[stop:], isWhiteSpace))
		}
		if startOff < start {
			dst = append(dst, segment{span{startOff, start}, -1})
		}
		dst = append(dst, segment{span{start, stop}, tok.ID})
		startOff = stop
	}
	if startOff < len(s) {
		dst = append(dst, segment{span{startOff, len(s)}, -1})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isRustWord(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isRustWord(r)
}
