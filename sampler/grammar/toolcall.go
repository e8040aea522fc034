package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// A forced tool call (OpenAI's tool_choice "required" or a named
// function) is decoded under a ToolCallConstraint that lets through only
// the tokens that keep the reply a prefix of
//
//	prefix NAME mid ARGS suffix EOS
//
// where NAME is one of the offered tools and ARGS a JSON object: the
// idea of vLLM's structured-output decoding for "required" and of
// llama.cpp's tool-call grammars. Any object is let through unless the
// grammar has the tool's schema (NewToolCallGrammarArgs): then ARGS is
// also a document of that schema. Numbers stay within float64 (at
// most 15 integer digits, 2 exponent digits) and nesting within 16
// levels. The automaton reads the bytes of each candidate token; special
// tokens (and the end tokens) never match inside the name or the JSON.
// With a token budget (max_tokens) the constraint also keeps room to
// close what is open (strings, objects, the suffix), so a reply that
// reaches the budget still parses; when the budget is too small for any
// call, the grammar alone rules and the reply ends cut.

// ErrToolCallGrammar is returned for a ToolCallGrammar that cannot be
// built: no tool names, an empty name or one with a '"' or '\', or an
// empty mid.
var ErrToolCallGrammar = errors.New("grammar: bad tool-call grammar")

// ToolCallGrammar is the text of one forced call: literal prefix, mid and
// suffix around one of the names and a JSON object. It is read-only once
// built and may be shared by any number of constraints.
type ToolCallGrammar struct {
	prefix, mid, suffix string
	names               []string  // sorted, unique
	args                []*Schema // the arguments' schema of each name (nil: any object); nil: none
}

// NewToolCallGrammar returns the grammar of a call written
// prefix + name + mid + arguments + suffix, name one of names (see
// chat.Format.CallSyntax for the formats' literals). The three literals
// may not be empty: ErrToolCallGrammar otherwise.
func NewToolCallGrammar(prefix, mid, suffix string, names []string) (*ToolCallGrammar, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no tool names", ErrToolCallGrammar)
	}
	for _, l := range [...]struct{ name, text string }{{"prefix", prefix}, {"mid", mid}, {"suffix", suffix}} {
		if l.text == "" {
			return nil, fmt.Errorf("%w: empty %s", ErrToolCallGrammar, l.name)
		}
	}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "\"\\") || !utf8.ValidString(n) {
			return nil, fmt.Errorf("%w: tool name %q", ErrToolCallGrammar, n)
		}
	}
	g := &ToolCallGrammar{prefix: prefix, mid: mid, suffix: suffix, names: slices.Clone(names)}
	slices.Sort(g.names)
	g.names = slices.Compact(g.names)
	return g, nil
}

// NewToolCallGrammarArgs is NewToolCallGrammar with the arguments of
// names[i] following args[i] (nil: any object). A schema must let an
// object through (its first byte '{'); a *SchemaError otherwise.
func NewToolCallGrammarArgs(prefix, mid, suffix string, names []string, args []*Schema) (*ToolCallGrammar, error) {
	if len(args) != len(names) {
		return nil, fmt.Errorf("%w: %d schemas for %d names", ErrToolCallGrammar, len(args), len(names))
	}
	g, err := NewToolCallGrammar(prefix, mid, suffix, names)
	if err != nil {
		return nil, err
	}
	g.args = make([]*Schema, len(g.names))
	for i, s := range args {
		if s == nil {
			continue
		}
		if !s.root.first['{'] {
			return nil, &SchemaError{Feature: "type", Msg: fmt.Sprintf("the arguments of %q must be an object", names[i])}
		}
		k, _ := slices.BinarySearch(g.names, names[i])
		if g.args[k] != nil && g.args[k] != s {
			return nil, fmt.Errorf("%w: two schemas for %q", ErrToolCallGrammar, names[i])
		}
		g.args[k] = s
	}
	return g, nil
}

// Has reports whether name is one of the grammar's tool names.
func (g *ToolCallGrammar) Has(name string) bool {
	_, found := slices.BinarySearch(g.names, name)
	return found
}

// Vocab is a vocabulary as a ToolCallConstraint reads it: each token's
// bytes, which are special, which end a reply. Build it once per
// tokenizer (a fraction of a second for 150k tokens); it is read-only and
// shared. Its tries (the tokens by bytes) are built by the first
// constraint made on it.
type Vocab struct {
	bytes      [][]byte
	literal    []bool // special tokens: only in the literal parts (prefix, mid, suffix)
	end        []bool // the end (EOS) tokens
	plain      []bool // whole UTF-8 characters, no control, '"' or '\': inside a string, a no-op
	firstPlain int    // the lowest plain token; -1: none
	ends       []int32
	maxLen     int // longest token, in bytes

	schemaOnce sync.Once
	sv         *schemaVocab // the tries of the constraints, built at first use
}

// NewVocab returns the vocabulary whose token id adds pieces[id] to the
// text (a SentencePiece word start with its space), special[id] marks
// the special tokens (len(special) <= len(pieces)) and ends are the
// tokens that end a reply (EOS). Ids out of range are ignored.
func NewVocab(pieces [][]byte, special []bool, ends []int32) *Vocab {
	n := len(pieces)
	v := &Vocab{bytes: pieces, literal: make([]bool, n), end: make([]bool, n), plain: make([]bool, n)}
	for _, id := range ends {
		if id >= 0 && int(id) < n {
			v.end[id] = true
			v.ends = append(v.ends, id)
		}
	}
	copy(v.literal, special)
	for id, b := range pieces {
		v.maxLen = max(v.maxLen, len(b))
		v.plain[id] = len(b) > 0 && !v.literal[id] && !v.end[id] && utf8.Valid(b)
		for _, x := range b {
			if x < 0x20 || x == 0x7F || x == '"' || x == '\\' {
				v.plain[id] = false
			}
		}
	}
	v.firstPlain = slices.Index(v.plain, true)
	return v
}

// MaxLen is the longest token, in bytes.
func (v *Vocab) MaxLen() int { return v.maxLen }

// Phases of a forced call.
const (
	phPrefix uint8 = iota
	phName
	phMid
	phJSON
	phSuffix
	phEnd // only an end token may follow
)

// JSON states (phJSON).
const (
	jValue    uint8 = iota // a value must come
	jArrFirst              // after '[': a value or ']'
	jObjFirst              // after '{': a key or '}'
	jKey                   // after ',' in an object: a key
	jColon                 // after a key
	jString                // in a string
	jEsc                   // after '\'
	jHex                   // in \uXXXX
	jAfter                 // after a value: ',' or the closer
	jMinus                 // number states; jZero, jInt, jFrac, jExp are complete
	jZero
	jInt
	jDot
	jFrac
	jE
	jESign
	jExp
	jLit // in true, false or null
)

// Bounds on the arguments: nesting, and the digits of a number's integer
// part and exponent.
const (
	maxDepth     = 16
	maxIntDigits = 15
	maxExpDigits = 2
)

// gstate is the automaton's state: small and copied freely.
type gstate struct {
	phase  uint8
	js     uint8
	key    bool  // the string is an object key
	more   uint8 // UTF-8 continuation bytes (jString) or hex digits (jHex) still due
	cmin   uint8 // jString: the range of the next continuation byte
	cmax   uint8
	lit    uint8 // jLit: index in literals
	depth  uint8
	pos    int // bytes done of the literal part, the name or the true/false/null; digits of jInt, jExp
	lo, hi int // phName: names[lo:hi] begin with the pos bytes typed
	stack  [maxDepth]byte
}

var literals = [...]string{"true", "false", "null"}

func isWS(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func isHex(b byte) bool { return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' }

// step reads byte b; false if the grammar forbids it (s is then garbage).
func (g *ToolCallGrammar) step(s *gstate, b byte) bool {
	switch s.phase {
	case phPrefix, phMid, phSuffix:
		lit := g.literal(s.phase)
		if lit[s.pos] != b {
			return false
		}
		s.pos++
		if s.pos == len(lit) {
			s.phase, s.pos = s.phase+1, 0
			if s.phase == phName {
				s.lo, s.hi = 0, len(g.names)
			}
		}
		return true
	case phName:
		if b == g.mid[0] && s.lo < s.hi && len(g.names[s.lo]) == s.pos {
			s.phase, s.pos = phMid, 1
			return true
		}
		lo, hi := -1, s.hi
		for i := s.lo; i < s.hi; i++ {
			if n := g.names[i]; len(n) > s.pos && n[s.pos] == b {
				if lo < 0 {
					lo = i
				}
			} else if lo >= 0 {
				hi = i
				break
			}
		}
		if lo < 0 {
			return false
		}
		s.lo, s.hi, s.pos = lo, hi, s.pos+1
		return true
	case phJSON:
		return g.stepJSON(s, b)
	}
	return false
}

func (g *ToolCallGrammar) literal(phase uint8) string {
	switch phase {
	case phPrefix:
		return g.prefix
	case phMid:
		return g.mid
	}
	return g.suffix
}

func (g *ToolCallGrammar) stepJSON(s *gstate, b byte) bool {
	switch s.js {
	case jValue, jArrFirst:
		if isWS(b) {
			return s.depth > 0 || s.js == jArrFirst
		}
		if s.js == jArrFirst && b == ']' {
			return s.pop()
		}
		if s.depth == 0 && b != '{' {
			return false // the arguments are an object
		}
		switch {
		case b == '{' || b == '[':
			if s.depth == maxDepth {
				return false
			}
			s.stack[s.depth] = b
			s.depth++
			s.js = jObjFirst
			if b == '[' {
				s.js = jArrFirst
			}
		case b == '"':
			s.js, s.key, s.more = jString, false, 0
		case b == '-':
			s.js = jMinus
		case b == '0':
			s.js = jZero
		case b >= '1' && b <= '9':
			s.js, s.pos = jInt, 1
		case b == 't' || b == 'f' || b == 'n':
			s.js, s.pos, s.lit = jLit, 1, uint8(strings.IndexByte("tfn", b))
		default:
			return false
		}
	case jObjFirst, jKey:
		switch {
		case isWS(b):
		case b == '"':
			s.js, s.key, s.more = jString, true, 0
		case b == '}' && s.js == jObjFirst:
			return s.pop()
		default:
			return false
		}
	case jColon:
		switch {
		case isWS(b):
		case b == ':':
			s.js = jValue
		default:
			return false
		}
	case jString:
		switch {
		case s.more > 0:
			if b < s.cmin || b > s.cmax {
				return false
			}
			s.more, s.cmin, s.cmax = s.more-1, 0x80, 0xBF
		case b == '"':
			s.js = jAfter
			if s.key {
				s.js = jColon
			}
		case b == '\\':
			s.js = jEsc
		case b < 0x20 || b == 0x7F:
			return false
		case b < 0x80:
		case b >= 0xC2 && b <= 0xDF:
			s.more, s.cmin, s.cmax = 1, 0x80, 0xBF
		case b >= 0xE0 && b <= 0xEF: // no overlong forms, no surrogates
			s.more, s.cmin, s.cmax = 2, 0x80, 0xBF
			if b == 0xE0 {
				s.cmin = 0xA0
			} else if b == 0xED {
				s.cmax = 0x9F
			}
		case b >= 0xF0 && b <= 0xF4: // up to U+10FFFF
			s.more, s.cmin, s.cmax = 3, 0x80, 0xBF
			if b == 0xF0 {
				s.cmin = 0x90
			} else if b == 0xF4 {
				s.cmax = 0x8F
			}
		default:
			return false
		}
	case jEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.js = jString
		case 'u':
			s.js, s.more = jHex, 4
		default:
			return false
		}
	case jHex:
		if !isHex(b) {
			return false
		}
		if s.more--; s.more == 0 {
			s.js = jString
		}
	case jAfter:
		switch {
		case isWS(b):
		case b == ',':
			s.js = jValue
			if s.stack[s.depth-1] == '{' {
				s.js = jKey
			}
		case b == '}' || b == ']':
			if open := s.stack[s.depth-1]; open == '{' && b != '}' || open == '[' && b != ']' {
				return false
			}
			return s.pop()
		default:
			return false
		}
	case jMinus, jDot, jE, jESign:
		switch {
		case b >= '0' && b <= '9':
			switch {
			case s.js == jMinus && b == '0':
				s.js = jZero
			case s.js == jMinus:
				s.js, s.pos = jInt, 1
			case s.js == jDot:
				s.js = jFrac
			default:
				s.js, s.pos = jExp, 1
			}
		case (b == '+' || b == '-') && s.js == jE:
			s.js = jESign
		default:
			return false
		}
	case jZero, jInt, jFrac, jExp:
		switch {
		case b >= '0' && b <= '9' && s.js != jZero:
			// Numbers stay within float64: a client's JSON decoder may
			// refuse 1e400 (Go's does).
			if s.js == jInt && s.pos == maxIntDigits || s.js == jExp && s.pos == maxExpDigits {
				return false
			}
			s.pos++
		case b == '.' && (s.js == jZero || s.js == jInt):
			s.js = jDot
		case (b == 'e' || b == 'E') && s.js != jExp:
			s.js = jE
		default: // the number ended: b comes after it
			s.js = jAfter
			return g.stepJSON(s, b)
		}
	case jLit:
		lit := literals[s.lit]
		if lit[s.pos] != b {
			return false
		}
		if s.pos++; s.pos == len(lit) {
			s.js = jAfter
		}
	}
	return true
}

// strLex is the lexer's part of a gstate inside a JSON string: the only
// fields that the bytes of a string change.
type strLex struct{ js, more, cmin, cmax uint8 }

// stringLex is the lexer after b, read inside a JSON string from a
// character boundary; false if the string refuses b. b has no '"'.
func stringLex(b []byte) (strLex, bool) {
	var g ToolCallGrammar // the string's states read nothing of the grammar
	s := gstate{phase: phJSON, js: jString}
	for _, x := range b {
		if !g.stepJSON(&s, x) {
			return strLex{}, false
		}
	}
	return strLex{s.js, s.more, s.cmin, s.cmax}, true
}

// pop closes the innermost container; the arguments end with the last.
func (s *gstate) pop() bool {
	s.depth--
	s.js = jAfter
	if s.depth == 0 {
		s.phase, s.pos = phSuffix, 0
	}
	return true
}

// closer is the next byte of a short way to finish the call from s (0 in
// phEnd): close what is open, fill what must be there with the least
// (0, "", the first name left). Following it is deterministic, so the
// completion from s is one string and each step on it leaves the rest.
func (g *ToolCallGrammar) closer(s *gstate) byte {
	switch s.phase {
	case phPrefix, phMid, phSuffix:
		return g.literal(s.phase)[s.pos]
	case phName:
		if s.lo >= s.hi {
			return 0
		}
		if n := g.names[s.lo]; len(n) > s.pos {
			return n[s.pos]
		}
		return g.mid[0]
	case phEnd:
		return 0
	}
	switch s.js {
	case jValue:
		if s.depth == 0 {
			return '{'
		}
		return '0'
	case jMinus, jDot, jE, jESign, jHex:
		return '0'
	case jArrFirst:
		return ']'
	case jObjFirst:
		return '}'
	case jKey:
		return '"'
	case jColon:
		return ':'
	case jString:
		if s.more > 0 {
			return s.cmin
		}
		return '"'
	case jEsc:
		return 'n'
	case jLit:
		return literals[s.lit][s.pos]
	}
	// jAfter and complete numbers: close the innermost container.
	if s.stack[s.depth-1] == '{' {
		return '}'
	}
	return ']'
}

// cannotFinish is completion's answer for a state it cannot finish from
// (none should exist; FuzzToolCallGrammar and the walks check).
const cannotFinish = 1 << 30

// completion is the number of bytes closer takes to finish from s.
func (g *ToolCallGrammar) completion(s gstate) int {
	n := 0
	for s.phase != phEnd {
		if b := g.closer(&s); b == 0 || !g.step(&s, b) {
			return cannotFinish
		}
		n++
	}
	return n
}

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
