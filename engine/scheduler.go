package engine

import (
	"time"

	"slices"

	"github.com/vkllm/vkllm/models"
)

// sequence is a request inside the engine. The scheduler reads and moves
// the fields above the line (the block manager sets numCached and
// numReused when it admits the request); the rest belongs to the block
// manager (seqID), the runner and output.
type sequence struct {
	id          string
	state       State
	tokens      []int32 // prompt then output
	numPrompt   int
	numCached   int              // leading tokens whose K/V are in the cache
	numReused   int              // of those, found in the cache (prefix or session) when it got its sequence
	session     string           // the session it belongs to, if any
	adapter     models.AdapterID // its LoRA adapter (NoAdapter: the base model)
	adapterName string           // its name, "" for none
	scope       string           // Request.CacheScope: prefixes are shared within it only
	// ---
	seqID int32 // KV sequence id while it holds one (from the block manager), else -1
	post  postState

	choice int     // its index among its request's choices
	fan    *fanout // its request's choices when there are several, else nil
	spec   specState
	emb    *embedState // an embedding request's pooling (embed.go), else nil

	queued, scheduled, firstToken time.Time // for Output.Timing
}

// chunk asks the runner to process seq.tokens[start : start+n]; sample is
// true when that reaches the end of the tokens (its last token gives
// logits and a new token is drawn). A decode may also score the first
// draft of seq.spec.draft (speculation): they follow its last token,
// with logits on each.
type chunk struct {
	seq      *sequence
	start, n int
	sample   bool
	draft    int
}

// schedule is one step's work.
type schedule struct {
	chunks    []chunk     // in batch order: running requests first, then new ones
	preempted []*sequence // lost their cells this step (the runner frees them)
}

// schedulerConfig bounds a step.
type schedulerConfig struct {
	maxSeqs   int // running requests at once (their budget of sequence ids)
	maxTokens int // tokens in one step (the batch)
}

// scheduler keeps the queues. It only counts cells; the block manager
// changes them.
type scheduler struct {
	cfg     schedulerConfig
	waiting []*sequence // front first; preempted requests go to the front
	running []*sequence // oldest first; the newest is preempted first
}

func newScheduler(cfg schedulerConfig) *scheduler { return &scheduler{cfg: cfg} }

func (s *scheduler) add(q *sequence) { s.waiting = append(s.waiting, q) }

// remove takes q out of whichever queue holds it.
func (s *scheduler) remove(q *sequence) {
	s.waiting = removeSeq(s.waiting, q)
	s.running = removeSeq(s.running, q)
}

// removeSeq removes q from qs; slices.Delete clears the freed slot, so
// the backing array holds no ended sequence (nor its sampler).
func removeSeq(qs []*sequence, q *sequence) []*sequence {
	for i, x := range qs {
		if x == q {
			return slices.Delete(qs, i, i+1)
		}
	}
	return qs
}

// next plans one step with the block manager. Running requests come
// first, oldest first (decodes and unfinished prefill chunks); a request
// that needs more cells than are free first evicts retained sequences,
// least recently used first, then preempts the newest running request,
// itself included. Only if nobody was preempted are waiting requests
// admitted, front first, while the token budget, the cells and the
// running budget last. Admission asks the block manager what the cache
// already holds of the request (match, nano-vllm's can_allocate) and
// plans only the rest: its chunk starts at its cached tokens, and its
// prompt may be cut into chunks. Allocate then gives it its sequence, so
// the plan is final: the runner runs it as it is.
func (s *scheduler) next(m *blockManager) (*schedule, error) {
	sc := &schedule{}
	budget := s.cfg.maxTokens
	planned := 0 // cells this step's chunks will take
	free := m.freeCells()
	for i := 0; i < len(s.running) && budget > 0; i++ {
		q := s.running[i]
		n := min(len(q.tokens)-q.numCached, budget)
		if n <= 0 {
			continue
		}
		for free < n && len(s.running) > i {
			ok, err := m.evictLRU(nil)
			if err != nil {
				return nil, err
			}
			if free = m.freeCells() - planned; ok {
				continue
			}
			victim := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			if err := transition(victim.id, &victim.state, Preempted); err != nil {
				return nil, err
			}
			if err := m.release(victim); err != nil {
				return nil, err
			}
			free = m.freeCells() - planned
			victim.numCached = 0
			sc.preempted = append(sc.preempted, victim)
		}
		if len(s.running) <= i { // q preempted itself
			break
		}
		c := chunk{seq: q, start: q.numCached, n: n, sample: q.numCached+n == len(q.tokens)}
		if c.sample { // drafts ride along within the budget and the free cells, never evicting
			c.draft = max(min(len(q.spec.draft), budget-n, free-n), 0)
		}
		sc.chunks = append(sc.chunks, c)
		budget -= n + c.draft
		free -= n + c.draft
		planned += n + c.draft
	}
	if len(sc.preempted) > 0 { // back to the front, oldest first
		for i, j := 0, len(sc.preempted)-1; i < j; i, j = i+1, j-1 {
			sc.preempted[i], sc.preempted[j] = sc.preempted[j], sc.preempted[i]
		}
		s.waiting = append(append([]*sequence(nil), sc.preempted...), s.waiting...)
		return sc, nil
	}
	for len(s.waiting) > 0 && budget > 0 {
		q := s.waiting[0]
		if s.held()+q.width() > s.cfg.maxSeqs {
			break
		}
		h := m.match(q)
		n := min(len(q.tokens)-h.n, budget)
		free, err := s.evictFor(m, n, h.entry, planned)
		if err != nil {
			return nil, err
		}
		if n > free && h.entry != nil { // the hit itself is in the way: give it up
			if err := m.evict(h.entry); err != nil {
				return nil, err
			}
			h = m.match(q) // a running request's blocks at most: nothing else is retained
			n = min(len(q.tokens)-h.n, budget)
			free = m.freeCells() - planned
		}
		if n > free {
			break
		}
		if err := transition(q.id, &q.state, Running); err != nil {
			return nil, err
		}
		if err := m.allocate(q, h); err != nil {
			return nil, err
		}
		s.waiting[0] = nil // the array behind the queue holds no ended sequence
		s.waiting = s.waiting[1:]
		s.running = append(s.running, q)
		sc.chunks = append(sc.chunks, chunk{seq: q, start: q.numCached, n: n, sample: q.numCached+n == len(q.tokens)})
		budget -= n
		free -= n
		planned += n
	}
	return sc, nil
}

// evictFor evicts retained sequences other than keep, least recently used
// first, until n cells are free beyond the planned ones or none is left,
// and returns the free cells beyond the planned ones.
func (s *scheduler) evictFor(m *blockManager, n int, keep *retained, planned int) (int, error) {
	free := m.freeCells() - planned
	for n > free {
		ok, err := m.evictLRU(keep)
		if err != nil || !ok {
			return free, err
		}
		free = m.freeCells() - planned
	}
	return free, nil
}
