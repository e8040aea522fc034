package engine

// sequence is a request inside the engine. The scheduler reads and moves
// the fields above the line; the rest belongs to the runner and output.
type sequence struct {
	id        string
	state     State
	tokens    []int32 // prompt then output
	numPrompt int
	numCached int    // leading tokens whose K/V are in the cache
	numReused int    // of those, found in the cache (prefix or session) when it got its sequence
	session   string // the session it belongs to, if any
	// ---
	seqID int32 // KV sequence id while it holds one, else -1
	post  postState

	choice int     // its index among its request's choices
	fan    *fanout // its request's choices when there are several, else nil
}

// chunk asks the runner to process seq.tokens[start : start+n]; sample is
// true when that reaches the end of the tokens (its last token gives
// logits and a new token is drawn).
type chunk struct {
	seq      *sequence
	start, n int
	sample   bool
}

// schedule is one step's work.
type schedule struct {
	chunks    []chunk     // in batch order: running requests first, then new ones
	preempted []*sequence // lost their cells this step (the runner frees them)
}

// schedulerConfig bounds a step.
type schedulerConfig struct {
	maxSeqs   int // running requests at once (the KV sequence ids)
	maxTokens int // tokens in one step (the batch)
}

// scheduler keeps the queues. It only counts cells; it never touches them.
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

func removeSeq(qs []*sequence, q *sequence) []*sequence {
	for i, x := range qs {
		if x == q {
			return append(qs[:i], qs[i+1:]...)
		}
	}
	return qs
}

// cellKeeper is what the scheduler asks of the cache (the runner): how
// many cells are free, to evict a retained sequence (a cached prefix or
// an idle session), and to free a preempted request's cells. Cells may be
// shared between sequences, so the scheduler never guesses what a release
// frees: it asks.
type cellKeeper interface {
	freeCells() int
	reclaim() (free int, ok bool, err error)
	preempt(q *sequence) (free int, err error)
}

// next plans one step. Running requests come first, oldest first
// (decodes and unfinished prefill chunks); a request that needs more
// cells than are free first reclaims retained sequences, then preempts
// the newest running request, itself included. Only if nobody was
// preempted are waiting requests admitted, front first, while the budget,
// the cells and the sequence ids last; their prompt may be cut into
// chunks. The chunk of a request that gets cached tokens when it is
// attached shrinks then (the runner's business): the plan reserves the
// budget and cells of its whole chunk.
func (s *scheduler) next(c cellKeeper) (*schedule, error) {
	sc := &schedule{}
	budget := s.cfg.maxTokens
	planned := 0 // cells this step's chunks will take
	free := c.freeCells()
	for i := 0; i < len(s.running) && budget > 0; i++ {
		q := s.running[i]
		n := min(len(q.tokens)-q.numCached, budget)
		if n <= 0 {
			continue
		}
		for free < n && len(s.running) > i {
			f, ok, err := c.reclaim()
			if err != nil {
				return nil, err
			}
			if free = f - planned; ok {
				continue
			}
			victim := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			if err := transition(victim.id, &victim.state, Preempted); err != nil {
				return nil, err
			}
			f, err = c.preempt(victim)
			if err != nil {
				return nil, err
			}
			free = f - planned
			victim.numCached = 0
			sc.preempted = append(sc.preempted, victim)
		}
		if len(s.running) <= i { // q preempted itself
			break
		}
		sc.chunks = append(sc.chunks, chunk{seq: q, start: q.numCached, n: n, sample: q.numCached+n == len(q.tokens)})
		budget -= n
		free -= n
		planned += n
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
		n := min(len(q.tokens), budget)
		for n > free {
			f, ok, err := c.reclaim()
			if err != nil {
				return nil, err
			}
			if free = f - planned; !ok {
				break
			}
		}
		if n > free {
			break
		}
		if err := transition(q.id, &q.state, Running); err != nil {
			return nil, err
		}
		s.waiting = s.waiting[1:]
		s.running = append(s.running, q)
		sc.chunks = append(sc.chunks, chunk{seq: q, start: 0, n: n, sample: n == len(q.tokens)})
		budget -= n
		free -= n
		planned += n
	}
	return sc, nil
}
