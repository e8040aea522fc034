package grammar

// SchemaConstraint is the Constraint of a reply that is one JSON document
// of a Schema, then an end token. A step's mask comes from a walk of the
// vocabulary's token trie with the automaton's state (a prefix the schema
// refuses prunes its whole subtree); inside a string, the tokens that stay
// in it come from a mask cached per vocabulary (and per pattern state),
// and only the tokens holding a '"' are walked. With a token budget
// (max_tokens) it keeps room to finish the document and write an end
// token, as ToolCallConstraint does; when the budget is too small for any, the
// schema alone rules and the reply ends cut. When a token it refused is
// drawn anyway, it constrains nothing from then on. It belongs to one
// request.
type SchemaConstraint struct {
	v      *Vocab
	sv     *schemaVocab
	st     state // the document so far
	w      state // scratch for the walk
	budget int
	n      int
	off    bool
}

// NewSchemaConstraint returns the constraint of a reply that is a
// document of s over vocabulary v, finished within maxTokens tokens
// when that is possible (0: no budget).
func NewSchemaConstraint(s *Schema, v *Vocab, maxTokens int) *SchemaConstraint {
	return &SchemaConstraint{v: v, sv: v.schema(), st: newState(s.root), budget: maxTokens}
}

// Allow lets through the tokens that keep the reply a prefix of a
// document of the schema (and, with a budget, leave room to finish it);
// the end tokens once the document may end.
func (c *SchemaConstraint) Allow(allowed []bool) {
	if c.off {
		return
	}
	if !c.st.done() {
		left := c.budget - c.n - 1 // one kept for the end token
		if !c.allow(allowed, c.budget > 0, left) && c.budget > 0 {
			c.allow(allowed, false, left)
		}
	}
	if c.st.completion() == 0 {
		for _, id := range c.v.ends {
			if int(id) < len(allowed) {
				allowed[id] = true
			}
		}
	}
}

// growth bounds how much a token that stays inside a string can add to
// the completion: an unfinished character, and a pattern's distance.
func growth(n *node) int {
	g := 5
	if n.pat != nil {
		g += n.pat.maxDist()
	}
	return g
}

func (c *SchemaConstraint) allow(allowed []bool, budget bool, left int) bool {
	c.w.frames, c.w.depth = c.st.frames, c.st.depth
	w := walker{s: &c.w, allowed: allowed, budget: budget, left: left}
	top := &c.st.frames[c.st.depth-1]
	base := 0
	if budget {
		base = c.st.completion()
	}
	if local, ok := c.localMask(top, allowed); ok {
		if budget && base+local > left-1 {
			clear(allowed)
		} else {
			w.some = true
			w.walk(c.sv.quote, 0)
			return w.some
		}
	}
	w.walk(c.sv.all, 0)
	return w.some
}

// localMask sets the tokens that stay inside the string on top (at a
// character boundary), when their effect is the string's alone; it
// returns the bound on their growth of the completion.
func (c *SchemaConstraint) localMask(f *frame, allowed []bool) (int, bool) {
	n := f.n
	if f.lx != lxChar {
		return 0, false
	}
	switch {
	case n.kind == kString && f.st == ssIn:
		switch {
		case n.pat != nil:
			copy(allowed, c.v.patternMask(n, f.dfa))
		case n.maxLen >= 0 && n.maxLen-int(f.count) < c.sv.maxChars:
			copy(allowed, c.v.lengthMask(n.maxLen-int(f.count)))
		default:
			copy(allowed, c.sv.free)
		}
		return growth(n), true
	case n.kind == kObject && f.st == osKey && f.other:
		copy(allowed, c.sv.free)
		return 5, true
	}
	return 0, false
}

// Accept advances past the token drawn.
func (c *SchemaConstraint) Accept(id int32) {
	c.n++
	if c.off || int(id) < len(c.v.end) && c.v.end[id] && c.st.completion() == 0 {
		return
	}
	if int(id) >= len(c.v.bytes) || c.v.literal[id] || c.v.end[id] || len(c.v.bytes[id]) == 0 {
		c.off = true
		return
	}
	c.st.logging = false
	for _, b := range c.v.bytes[id] {
		if !c.st.step(b) {
			c.off = true
			return
		}
	}
}

// Done reports whether the document is complete (only an end token may
// follow).
func (c *SchemaConstraint) Done() bool { return c.st.done() }
