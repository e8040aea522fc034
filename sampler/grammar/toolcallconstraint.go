package grammar

// ToolCallConstraint is the Constraint of a forced call: after the call
// only an end token may come. When the grammar has argument schemas
// (NewToolCallGrammarArgs), the arguments of the named tool also walk its
// schema's automaton in lockstep: a token must keep both on track, and
// the budget counts the schema's shortest completion. When a token it
// refused is drawn anyway (a Sampler draws freely when no token is
// allowed), it constrains nothing from then on. It belongs to one
// request.
type ToolCallConstraint struct {
	g      *ToolCallGrammar
	v      *Vocab
	st     gstate
	args   state // the arguments' schema state, while argsOn
	argsOn bool
	tmp    state        // a token's try that begins the arguments
	sv     *schemaVocab // v's tries
	path   []gstate     // scratch for the walk: the state at each depth of the trie
	budget int          // max_tokens; 0: none
	n      int          // tokens accepted
	off    bool         // a token the grammar refused was drawn: no constraint from then on
}

// NewToolCallConstraint returns a constraint that makes the reply one
// call in g over vocabulary v, finished within maxTokens tokens when
// that is possible (0: no budget).
func NewToolCallConstraint(g *ToolCallGrammar, v *Vocab, maxTokens int) *ToolCallConstraint {
	return &ToolCallConstraint{g: g, v: v, sv: v.schema(), budget: maxTokens}
}

// feed steps s over token id's bytes, and the arguments' schema state: a
// (nil while no schema is on; commit says a is the constraint's own and
// may be started). It returns the schema state in use at the end.
func (c *ToolCallConstraint) feed(s *gstate, a *state, id int, commit bool) (*state, bool) {
	b := c.v.bytes[id]
	if len(b) == 0 || c.v.end[id] || s.phase == phEnd {
		return a, false
	}
	for _, x := range b {
		if c.v.literal[id] && (s.phase == phName || s.phase == phJSON) {
			return a, false
		}
		if s.phase == phJSON && a != nil {
			if !commit {
				a.begin()
			}
			if !a.step(x) {
				return a, false
			}
		}
		was := s.phase
		if !c.g.step(s, x) {
			return a, false
		}
		if was == phMid && s.phase == phJSON && c.g.args != nil && c.g.args[s.lo] != nil {
			a = &c.tmp
			if commit {
				a = &c.args
				c.argsOn = true
			}
			*a = newState(c.g.args[s.lo].root)
		}
	}
	return a, true
}

// completionOf is the bytes that finish the call from s, the arguments'
// schema state a (nil: none on): the closer's way, through the first
// name left and its shortest arguments.
func (c *ToolCallConstraint) completionOf(s *gstate, a *state) int {
	switch {
	case s.phase == phJSON && a != nil:
		return a.completion() + len(c.g.suffix)
	case s.phase < phJSON && c.g.args != nil && int(s.lo) < len(c.g.args) && c.g.args[s.lo] != nil:
		return c.g.completion(*s) - 2 + c.g.args[s.lo].MinLen()
	}
	return c.g.completion(*s)
}

// Allow lets through the tokens that keep the reply on the grammar and,
// with a budget, leave enough tokens to finish it (one byte a token at
// worst). When the budget is too small for any, the grammar alone rules.
func (c *ToolCallConstraint) Allow(allowed []bool) { c.allowWith(allowed, c.allow) }

// allowWith is Allow with pass marking the tokens of one pass (the trie
// walk; the tests' scan of the vocabulary).
func (c *ToolCallConstraint) allowWith(allowed []bool, pass func(allowed []bool, budget bool, left int) bool) {
	if c.off {
		return
	}
	if c.st.phase == phEnd {
		for _, id := range c.v.ends {
			if int(id) < len(allowed) {
				allowed[id] = true
			}
		}
		return
	}
	left := c.budget - c.n // tokens left, this one included
	if !pass(allowed, c.budget > 0, left) && c.budget > 0 {
		pass(allowed, false, left)
	}
}

// active is the arguments' schema state, nil when none is on.
func (c *ToolCallConstraint) active() *state {
	if c.argsOn && c.st.phase == phJSON {
		return &c.args
	}
	return nil
}

// allow marks the tokens the grammar lets through and, with budget, that
// leave at most left-1 bytes to finish; it reports whether there is one.
// It walks the vocabulary's tries: a prefix the grammar (or the
// arguments' schema) refuses prunes its subtree, and the tokens of a
// prefix share its steps.
func (c *ToolCallConstraint) allow(allowed []bool, budget bool, left int) bool {
	a := c.active()
	if len(c.path) <= c.v.maxLen {
		c.path = make([]gstate, c.v.maxLen+1)
	}
	c.path[0] = c.st
	w := toolWalker{c: c, allowed: allowed, budget: budget, left: left, base: c.completionOf(&c.st, a)}
	// Inside a string, a plain token changes nothing (a free string of
	// the schema too): only the others are walked. Without a schema,
	// those that stay in the string only change its lexer, known
	// beforehand: only the tokens with a '"' are walked.
	inString := c.st.phase == phJSON && c.st.js == jString && c.st.more == 0 && (a == nil || onFreeString(a))
	t := c.sv.all
	switch {
	case inString && a == nil:
		w.plain()
		w.inString()
		t = c.sv.quote
	case inString:
		w.plain()
		t = c.sv.unplain
	}
	w.walk(t, 0, a, 0)
	w.special = true
	w.walk(c.sv.special, 0, a, 0)
	return w.some
}

// toolWalker tries the tokens of a trie from a ToolCallConstraint's
// state, as feed does token by token.
type toolWalker struct {
	c       *ToolCallConstraint
	allowed []bool
	budget  bool
	left    int  // with budget: tokens left, this one included
	base    int  // the completion from the constraint's state
	special bool // the trie's tokens are special: they only write the literal parts
	some    bool
}

// walk tries the children of node at (depth bytes deep), the grammar in
// state c.path[depth] and the arguments' schema in a (nil: none on). It
// steps a copy of the grammar's state for each child, in
// c.path[depth+1], and undoes a's steps.
func (w *toolWalker) walk(t *trie, at int32, a *state, depth int) {
	c := w.c
	s, ns := &c.path[depth], &c.path[depth+1]
	if s.phase == phEnd || w.special && (s.phase == phName || s.phase == phJSON) {
		return
	}
	nd := &t.nodes[at]
	for ci := nd.child0; ci < nd.child1; ci++ {
		ch := &t.nodes[ci]
		*ns = *s
		na := a
		var mark, d int
		stepped := s.phase == phJSON && a != nil
		if stepped {
			mark, d = a.begin()
			if !a.step(ch.b) {
				a.undo(mark, d)
				continue
			}
		}
		was := ns.phase
		if c.g.step(ns, ch.b) {
			if was == phMid && ns.phase == phJSON && c.g.args != nil && c.g.args[ns.lo] != nil {
				na = &c.tmp
				*na = newState(c.g.args[ns.lo].root)
			}
			if ch.tok1 > ch.tok0 {
				w.mark(t.toks[ch.tok0:ch.tok1], ns, na, depth+1)
			}
			if ch.child1 > ch.child0 {
				w.walk(t, ci, na, depth+1)
			}
		}
		if stepped {
			a.undo(mark, d)
		}
	}
}

// plain lets the plain tokens through, inside a string: they leave the
// completion as it is.
func (w *toolWalker) plain() {
	v := w.c.v
	if (!w.budget || w.base <= w.left-1) && v.firstPlain >= 0 && v.firstPlain < len(w.allowed) {
		copy(w.allowed, v.plain)
		w.some = true
	}
}

// inString lets through the tokens that stay inside the string and are
// not plain, when the budget allows: they only change the string's lexer.
func (w *toolWalker) inString() {
	c := w.c
	for i, id := range c.sv.inString {
		if int(id) >= len(w.allowed) {
			break
		}
		if w.measured(len(c.v.bytes[id])) {
			s, lx := c.st, c.sv.inStringLex[i]
			s.js, s.more, s.cmin, s.cmax = lx.js, lx.more, lx.cmin, lx.cmax
			if c.completionOf(&s, nil) > w.left-1 {
				continue
			}
		}
		w.allowed[id], w.some = true, true
	}
}

// measured reports whether the budget check measures the completion
// after a token of n bytes. A byte adds at most 4 bytes to the
// completion of any object (',' in an object needs `"":0`): only tokens
// that could overrun are measured. With argument schemas, every one is.
func (w *toolWalker) measured(n int) bool {
	return w.budget && (w.c.g.args != nil || w.base+4*n > w.left-1)
}

// mark lets through ids, the tokens of n bytes that leave the grammar in
// s and the schema in a, when the budget allows.
func (w *toolWalker) mark(ids []int32, s *gstate, a *state, n int) {
	if w.measured(n) && w.c.completionOf(s, a) > w.left-1 {
		return
	}
	for _, id := range ids {
		if int(id) < len(w.allowed) {
			w.allowed[id], w.some = true, true
		}
	}
}

// onFreeString: the top of a is a string any plain token may extend.
func onFreeString(a *state) bool {
	f := &a.frames[a.depth-1]
	if f.lx != lxChar {
		return false
	}
	n := f.n
	return n.kind == kString && f.st == ssIn && n.pat == nil && n.maxLen < 0 || n.kind == kObject && f.st == osKey && f.other
}

// Accept advances past the token drawn.
func (c *ToolCallConstraint) Accept(id int32) {
	c.n++
	if c.off || c.st.phase == phEnd && c.v.end[id] {
		return
	}
	if int(id) >= len(c.v.bytes) {
		c.off = true
		return
	}
	c.args.logging = false
	if _, ok := c.feed(&c.st, c.active(), int(id), true); !ok {
		c.off = true
	}
}
