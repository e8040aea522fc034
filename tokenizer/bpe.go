package tokenizer

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizers (models/bpe): a word is cut into
// characters (ids from the vocab; unknown ones become byte-fallback
// tokens <0xXX> or the unk token), then the lowest-ranked merge among
// adjacent symbols is applied, leftmost first, until none applies.
type bpe struct {
	vocab  map[string]int32
	merges map[uint64]mergeInfo // key pairKey(left, right)

	unk          int32 // -1: no unk token
	fuseUnk      bool
	byteFallback bool
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	fallbackIDs [256]int32 // id of "<0xXX>", -1 if absent

	// rawBytes: words arrive as raw bytes (the ByteLevel pre-tokenizer left
	// them unmapped) and byteIDs[b] is the id of b's alphabet character.
	rawBytes bool
	byteIDs  [256]int32

	cache wordCache
}

type mergeInfo struct {
	rank  int32
	newID int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// newBPE builds the model; merges are (left, right) token pairs in rank
// order. A later duplicate pair overrides an earlier one, as in tokenizers.
func newBPE(vocab map[string]int32, merges [][2]string, unk string, prefix, suffix string) (*bpe, error) {
	m := &bpe{vocab: vocab, unk: -1, prefix: prefix, suffix: suffix}
	if unk != "" {
		id, ok := vocab[unk]
		if !ok {
			// tokenizers only fails when the unk token is needed; an id of -2
			// reproduces that lazily.
			id = -2
		}
		m.unk = id
	}
	m.merges = make(map[uint64]mergeInfo, len(merges))
	buf := make([]byte, 0, 64)
	for i, mg := range merges {
		a, ok := vocab[mg[0]]
		if !ok {
			return nil, formatErr(fmt.Sprintf("model.merges[%d]", i), "token %q is not in the vocab", mg[0])
		}
		b, ok := vocab[mg[1]]
		if !ok {
			return nil, formatErr(fmt.Sprintf("model.merges[%d]", i), "token %q is not in the vocab", mg[1])
		}
		if len(mg[1]) < len(prefix) {
			return nil, formatErr(fmt.Sprintf("model.merges[%d]", i), "token %q is shorter than the continuing_subword_prefix", mg[1])
		}
		buf = append(append(buf[:0], mg[0]...), mg[1][len(prefix):]...)
		n, ok := vocab[string(buf)]
		if !ok {
			return nil, formatErr(fmt.Sprintf("model.merges[%d]", i), "merged token %q is not in the vocab", buf)
		}
		m.merges[pairKey(a, b)] = mergeInfo{rank: int32(i), newID: n}
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			id = -1
		}
		m.fallbackIDs[b] = id
	}
	return m, nil
}

// useRawBytes switches the model to raw-byte words if every byte's alphabet
// character is a token and no prefix/suffix is set; it reports whether it did.
func (m *bpe) useRawBytes() bool {
	if m.prefix != "" || m.suffix != "" {
		return false
	}
	for b := 0; b < 256; b++ {
		id, ok := m.vocab[byteToStr[b]]
		if !ok {
			return false
		}
		m.byteIDs[b] = id
	}
	m.rawBytes = true
	return true
}

// tokenize appends the ids of word to dst.
func (m *bpe) tokenize(dst []int32, word string, ws *workspace) ([]int32, error) {
	if word == "" {
		return dst, nil
	}
	if ids, ok := m.cache.get(word); ok {
		return append(dst, ids...), nil
	}
	start := len(dst)
	var err error
	dst, err = m.tokenizeUncached(dst, word, ws)
	if err != nil {
		return dst[:start], err
	}
	m.cache.put(word, dst[start:])
	return dst, nil
}

func (m *bpe) tokenizeUncached(dst []int32, word string, ws *workspace) ([]int32, error) {
	if m.ignoreMerges {
		key := word
		if m.rawBytes {
			key = byteLevelEncode(word)
		}
		if id, ok := m.vocab[key]; ok {
			return append(dst, id), nil
		}
	}
	syms := ws.syms[:0]
	if m.rawBytes {
		for i := 0; i < len(word); i++ {
			syms = append(syms, m.byteIDs[word[i]])
		}
	} else {
		var err error
		if syms, err = m.initialSymbols(syms, word); err != nil {
			return dst, err
		}
	}
	syms = m.mergeAll(syms, ws)
	ws.syms = syms
	return append(dst, syms...), nil
}

// initialSymbols cuts word into character tokens (merge_word in
// tokenizers, including its unk and byte-fallback rules).
func (m *bpe) initialSymbols(syms []int32, word string) ([]int32, error) {
	pendingUnk := false
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		s := word[i : i+n]
		if (i > 0 && m.prefix != "") || (i+n == len(word) && m.suffix != "") {
			if i > 0 {
				s = m.prefix + s
			}
			if i+n == len(word) {
				s += m.suffix
			}
		}
		i += n
		if id, ok := m.vocab[s]; ok {
			if pendingUnk {
				syms = append(syms, m.unk)
				pendingUnk = false
			}
			syms = append(syms, id)
			continue
		}
		if m.byteFallback {
			ok := true
			for k := 0; k < len(s); k++ {
				if m.fallbackIDs[s[k]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				// As in tokenizers, a pending unk is not flushed first.
				for k := 0; k < len(s); k++ {
					syms = append(syms, m.fallbackIDs[s[k]])
				}
				continue
			}
		}
		if m.unk == -1 {
			continue // no unk token: the character is dropped
		}
		if m.unk == -2 {
			return syms, formatErr("model.unk_token", "unk token is not in the vocab")
		}
		if pendingUnk && !m.fuseUnk {
			syms = append(syms, m.unk)
		}
		pendingUnk = true
	}
	if pendingUnk {
		syms = append(syms, m.unk)
	}
	return syms, nil
}

// smallWord is the length up to which mergeAll rescans the pair ranks
// instead of keeping a heap; both give the same result (merge_test.go).
const smallWord = 48

// mergeAll applies merges to syms in place until none applies and returns
// the shortened slice. The rule (tokenizers' Word::merge_all): repeatedly
// merge the adjacent pair with the lowest rank, the leftmost on ties.
func (m *bpe) mergeAll(syms []int32, ws *workspace) []int32 {
	if len(syms) < 2 {
		return syms
	}
	if len(syms) <= smallWord {
		return m.mergeSmall(syms, ws)
	}
	return m.mergeHeap(syms, ws)
}

const noRank = int32(1<<31 - 1)

// mergeSmall keeps the rank of each adjacent pair in an array and rescans it.
func (m *bpe) mergeSmall(syms []int32, ws *workspace) []int32 {
	ranks := ws.ranks[:0]
	news := ws.news[:0]
	for i := 0; i+1 < len(syms); i++ {
		mi, ok := m.merges[pairKey(syms[i], syms[i+1])]
		if !ok {
			mi.rank = noRank
		}
		ranks = append(ranks, mi.rank)
		news = append(news, mi.newID)
	}
	for {
		best, bestRank := -1, noRank
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		syms[best] = news[best]
		copy(syms[best+1:], syms[best+2:])
		syms = syms[:len(syms)-1]
		copy(ranks[best:], ranks[best+1:])
		ranks = ranks[:len(ranks)-1]
		copy(news[best:], news[best+1:])
		news = news[:len(news)-1]
		// Pairs (best-1, best) and (best, best+1) changed.
		if best > 0 {
			mi, ok := m.merges[pairKey(syms[best-1], syms[best])]
			if !ok {
				mi.rank = noRank
			}
			ranks[best-1], news[best-1] = mi.rank, mi.newID
		}
		if best < len(ranks) {
			mi, ok := m.merges[pairKey(syms[best], syms[best+1])]
			if !ok {
				mi.rank = noRank
			}
			ranks[best], news[best] = mi.rank, mi.newID
		}
	}
	ws.ranks, ws.news = ranks, news
	return syms
}

// mergeHeap is tokenizers' algorithm for long words: symbols in a linked
// list, candidate merges in a min-heap by (rank, position); an entry whose
// pair has since changed is skipped when popped.
func (m *bpe) mergeHeap(syms []int32, ws *workspace) []int32 {
	n := len(syms)
	prev, nxt := ws.prev[:0], ws.next[:0]
	for i := 0; i < n; i++ {
		prev = append(prev, int32(i-1))
		nxt = append(nxt, int32(i+1))
	}
	nxt[n-1] = -1
	alive := ws.alive[:0]
	for i := 0; i < n; i++ {
		alive = append(alive, true)
	}
	h := mergeHeap(ws.heap[:0])
	for i := 0; i+1 < n; i++ {
		if mi, ok := m.merges[pairKey(syms[i], syms[i+1])]; ok {
			h.push(heapItem{rank: mi.rank, pos: int32(i), newID: mi.newID})
		}
	}
	for len(h) > 0 {
		top := h.pop()
		p := top.pos
		if !alive[p] || nxt[p] < 0 {
			continue
		}
		q := nxt[p]
		mi, ok := m.merges[pairKey(syms[p], syms[q])]
		if !ok || mi.newID != top.newID {
			continue // stale
		}
		syms[p] = top.newID
		alive[q] = false
		nxt[p] = nxt[q]
		if nxt[q] >= 0 {
			prev[nxt[q]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if mi, ok := m.merges[pairKey(syms[pp], syms[p])]; ok {
				h.push(heapItem{rank: mi.rank, pos: pp, newID: mi.newID})
			}
		}
		if nn := nxt[p]; nn >= 0 {
			if mi, ok := m.merges[pairKey(syms[p], syms[nn])]; ok {
				h.push(heapItem{rank: mi.rank, pos: p, newID: mi.newID})
			}
		}
	}
	out := syms[:0]
	for i := 0; i < n; i++ {
		if alive[i] {
			out = append(out, syms[i])
		}
	}
	ws.prev, ws.next, ws.alive, ws.heap = prev, nxt, alive, h
	return out
}

type heapItem struct {
	rank, pos, newID int32
}

func (a heapItem) less(b heapItem) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

// mergeHeap is a binary min-heap of heapItem.
type mergeHeap []heapItem

func (h *mergeHeap) push(x heapItem) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() heapItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(s) {
			break
		}
		c := l
		if r := l + 1; r < len(s) && s[r].less(s[l]) {
			c = r
		}
		if !s[c].less(s[i]) {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}

// wordCache remembers the ids of recent words (tokenizers keeps 10 000 words
// shorter than 256 bytes). It is safe for concurrent use; when full it is
// emptied, which is crude but keeps memory bounded.
type wordCache struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const (
	cacheMaxWords   = 1 << 16
	cacheMaxWordLen = 256
)

func (c *wordCache) get(w string) ([]int32, bool) {
	if len(w) >= cacheMaxWordLen {
		return nil, false
	}
	c.mu.RLock()
	ids, ok := c.m[w]
	c.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	if len(w) >= cacheMaxWordLen {
		return
	}
	cp := append([]int32(nil), ids...)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= cacheMaxWords {
		c.m = make(map[string][]int32, 1024)
	}
	c.m[w] = cp
	c.mu.Unlock()
}
