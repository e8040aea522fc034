package engine

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/models"
)

// errNoSeqID means more sequences are held than the budgets allow: a bug.
var errNoSeqID = errors.New("engine: no free sequence id")

// cellStore is what the block manager needs of the KV cache (a
// models.Context): its size and fill, and the sequence operations that
// share, cut and free cells. It never touches K/V storage.
type cellStore interface {
	Params() models.ContextParams // ContextLen: the cells
	Used() int
	KVUsedBy(seqs []models.SeqID) int
	SeqCp(src, dst models.SeqID, p0, p1 int32) error
	SeqRm(seq models.SeqID, p0, p1 int32) error
}

// hit is what the cache already holds of a waiting request's tokens:
// its first n tokens, in its session's idle sequence (taken over) or in
// the sequence src (shared through SeqCp), a retained prefix (entry) or
// a running request. noHit holds nothing.
type hit struct {
	n       int
	src     int32     // sequence to share the n tokens from, -1 for none
	entry   *retained // the pool entry of src or of the session, if retained
	session bool      // entry is q's idle session: q takes its sequence over
}

var noHit = hit{src: -1}

// blockManager is the cache manager the scheduler plans with, in
// nano-vllm's BlockManager shape: match (what can_allocate looks at),
// allocate, deallocate, and the LRU eviction of retained sequences. It
// owns the sequence ids and gives the running requests and the retained
// sequences (cached prefixes, idle sessions) a budget each, so that a
// full engine still keeps its prefixes: at most maxRunning ids are held
// by requests (the scheduler keeps to it) and at most maxRetained by the
// pool (the block manager keeps to it), out of maxRunning+maxRetained.
//
// A "block" is BlockSize tokens at the same positions of a sequence: the
// cache is a pool of cells, not of pages, so a reused block is a run of
// cells shared with SeqCp. A waiting request can reuse the whole leading
// blocks of a retained prefix or of a running request's computed tokens.
type blockManager struct {
	cells       cellStore
	pool        *pool
	prefix      bool      // prefix caching on
	count       *counters // the Engine's (prefix-cache queries and hits)
	maxRetained int
	free        []int32             // stack of unused sequence ids
	running     map[int32]*sequence // by sequence id: requests holding one
	ids         []models.SeqID      // retainedOnly's list of running ids, reused
}

// newBlockManager manages ids [0, maxRunning+maxRetained) of cells.
func newBlockManager(cells cellStore, maxRunning, maxRetained int, prefix bool, count *counters) *blockManager {
	m := &blockManager{cells: cells, pool: newPool(), prefix: prefix, count: count,
		maxRetained: maxRetained, running: map[int32]*sequence{}}
	for id := maxRunning + maxRetained - 1; id >= 0; id-- { // pop gives 0 first
		m.free = append(m.free, int32(id))
	}
	return m
}

// freeCells is the number of empty cells.
func (m *blockManager) freeCells() int {
	return m.cells.Params().ContextLen - m.cells.Used()
}

// retainedOnly is the number of cells that only retained sequences
// hold: what evicting every one of them would free. The others hold K/V
// of a running request.
func (m *blockManager) retainedOnly() int {
	if len(m.pool.entries) == 0 {
		return 0
	}
	m.ids = m.ids[:0]
	for id := range m.running {
		m.ids = append(m.ids, models.SeqID(id))
	}
	return m.cells.Used() - m.cells.KVUsedBy(m.ids)
}

// match finds what the cache holds of q's tokens, which holds no
// sequence: its session's idle sequence (up to where the tokens differ),
// else, with prefix caching, the most whole leading blocks that a
// retained prefix or a running request has computed. It leaves at least
// one token to compute (its logits are needed) and changes nothing.
func (m *blockManager) match(q *sequence) hit {
	if q.everyRow() { // mean pooling needs every token's hidden state
		return noHit
	}
	head := q.tokens[:len(q.tokens)-1]
	if s := m.pool.sessions[q.session]; q.session != "" && s != nil {
		n := 0 // another adapter's K/V: q takes the sequence over, empty
		if s.adapter == q.adapter {
			n = commonPrefix(s.tokens, head)
		}
		return hit{n: n, src: s.seqID, entry: s, session: true}
	}
	if !m.prefix {
		return noHit
	}
	h := noHit
	if e, n := m.pool.match(q.adapter, q.tokens); e != nil {
		h = hit{n: n, src: e.seqID, entry: e}
	}
	for id, r := range m.running {
		if r.adapter != q.adapter {
			continue
		}
		n := commonPrefix(r.tokens[:r.numCached], head) / BlockSize * BlockSize
		if n > h.n || n == h.n && n > 0 && h.entry == nil && id < h.src { // the lowest id on a tie: the same plan every run
			h = hit{n: n, src: id}
		}
	}
	return h
}

// allocate gives q, which holds no sequence, an id and the tokens of h
// (from match, with nothing changed since): it sets q.seqID and
// q.numCached (and q.numReused) to h.n. The caller keeps to the running
// budget.
func (m *blockManager) allocate(q *sequence, h hit) error {
	if h.session {
		m.pool.remove(h.entry)
		if err := m.cells.SeqRm(models.SeqID(h.src), int32(h.n), -1); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		q.seqID = h.src
	} else {
		if len(m.free) == 0 {
			return errNoSeqID
		}
		id := m.free[len(m.free)-1]
		if h.n > 0 {
			if err := m.cells.SeqCp(models.SeqID(h.src), models.SeqID(id), 0, int32(h.n)); err != nil {
				return fmt.Errorf("engine: %w", err)
			}
		}
		m.free = m.free[:len(m.free)-1]
		q.seqID = id
		if h.entry != nil {
			m.pool.touch(h.entry)
		}
		if m.prefix {
			m.count.prefixQueries += uint64(len(q.tokens))
			m.count.prefixHits += uint64(h.n)
		}
	}
	m.running[q.seqID] = q
	q.numCached, q.numReused = h.n, h.n
	return nil
}

// deallocate ends q's hold on its sequence: the sequence is kept for its
// session (when it has one) or as a cached prefix (its whole computed
// blocks, when prefix caching is on), else freed. A kept sequence takes
// the retained budget: the least recently used retained sequence gives
// way (a prefix only to a prefix); when none can, q's is freed.
func (m *blockManager) deallocate(q *sequence) error {
	if q.seqID < 0 {
		return nil
	}
	toks := q.tokens[:q.numCached]
	switch {
	case q.session != "" && len(toks) > 0:
		if old := m.pool.sessions[q.session]; old != nil {
			if err := m.evict(old); err != nil {
				return err
			}
		}
		if ok, err := m.makeRoom(false); !ok || err != nil {
			return errors.Join(err, m.release(q))
		}
		m.pool.addSession(q.session, q.seqID, q.adapter, append([]int32(nil), toks...))
	case m.prefix && len(toks) >= BlockSize:
		if ok, err := m.makeRoom(true); !ok || err != nil {
			return errors.Join(err, m.release(q))
		}
		n := len(toks) / BlockSize * BlockSize
		if err := m.cells.SeqRm(models.SeqID(q.seqID), int32(n), -1); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		m.pool.addPrefix(q.seqID, q.adapter, append([]int32(nil), toks[:n]...))
	default:
		return m.release(q)
	}
	delete(m.running, q.seqID)
	q.seqID = -1
	return nil
}

// makeRoom makes the pool able to take one more sequence within the
// retained budget, evicting the least recently used entry if needed
// (only a prefix entry when prefixOnly). It reports whether there is
// room.
func (m *blockManager) makeRoom(prefixOnly bool) (bool, error) {
	if len(m.pool.entries) < m.maxRetained {
		return true, nil
	}
	v := m.pool.victim(nil)
	if v == nil || prefixOnly && v.session != "" {
		return false, nil
	}
	return true, m.evict(v)
}

// release frees q's cells and sequence id, if it holds them.
func (m *blockManager) release(q *sequence) error {
	if q.seqID < 0 {
		return nil
	}
	if err := m.cells.SeqRm(models.SeqID(q.seqID), -1, -1); err != nil {
		return fmt.Errorf("engine: release: %w", err)
	}
	delete(m.running, q.seqID)
	m.free = append(m.free, q.seqID)
	q.seqID = -1
	return nil
}

// evictLRU evicts the least recently used retained sequence other than
// keep (a cached prefix first, else an idle session); ok is false when
// there is none.
func (m *blockManager) evictLRU(keep *retained) (ok bool, err error) {
	v := m.pool.victim(keep)
	if v == nil {
		return false, nil
	}
	return true, m.evict(v)
}

// evict frees a retained sequence, its cells and its id.
func (m *blockManager) evict(v *retained) error {
	m.pool.remove(v)
	if err := m.cells.SeqRm(models.SeqID(v.seqID), -1, -1); err != nil {
		return fmt.Errorf("engine: release: %w", err)
	}
	m.free = append(m.free, v.seqID)
	return nil
}

func commonPrefix(a, b []int32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
