package server

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// A forced tool call (tool_choice "required" or a named function) is
// decoded under a sampler.Constraint that lets through only the tokens
// that keep the reply a prefix of
//
//	prefix NAME mid ARGS suffix EOS
//
// where NAME is one of the offered tools and ARGS a JSON object: the
// idea of vLLM's structured-output decoding for "required" and of
// llama.cpp's tool-call grammars, smaller: any object is let through, the
// function's JSON Schema is not enforced. The automaton reads the bytes
// of each candidate token; special tokens (and the end tokens) never match
// inside the JSON. With max_tokens the constraint also keeps room to close
// what is open (strings, objects, the suffix), so a reply that reaches
// max_tokens still parses; when max_tokens is too small for any call, the
// grammar alone rules and the reply ends cut ("length").

// toolGrammar is the literal text around a forced call, per format.
type toolGrammar struct {
	prefix, mid, suffix string
	names               []string // sorted
}

func newToolGrammar(f chat.Format, tools []chat.Tool) toolGrammar {
	var g toolGrammar
	switch f {
	case chat.FormatLlama3:
		g = toolGrammar{prefix: `{"name": "`, mid: `", "parameters": `, suffix: `}`}
	case chat.FormatMistral:
		g = toolGrammar{prefix: `[TOOL_CALLS][{"name": "`, mid: `", "arguments": `, suffix: `}]`}
	default: // Hermes (Qwen, and the server's own tool prompt)
		g = toolGrammar{prefix: "<tool_call>\n{\"name\": \"", mid: `", "arguments": `, suffix: "}\n</tool_call>"}
	}
	for _, t := range tools {
		g.names = append(g.names, t.Function.Name)
	}
	slices.Sort(g.names)
	g.names = slices.Compact(g.names)
	return g
}

// vocab is a tokenizer's tokens as bytes, for the constraint.
type vocab struct {
	bytes   [][]byte
	literal []bool // special tokens: only in the literal parts (prefix, mid, suffix)
	end     []bool // the end (EOS) tokens
	plain   []bool // whole UTF-8 characters, no control, '"' or '\': inside a string, a no-op
	ends    []int32
	maxLen  int // longest token, in bytes
}

// vocab is the model's vocabulary for the tool constraint, built at the
// first forced call (a fraction of a second for 150k tokens).
func (m *Model) vocab() *vocab {
	m.vocabOnce.Do(func() { m.vocabBytes = vocabOf(m.Gen.Tokenizer()) })
	return m.vocabBytes
}

// vocabOf reads the bytes of every token.
func vocabOf(tok *tokenizer.Tokenizer) *vocab {
	n := tok.VocabSize()
	v := &vocab{bytes: make([][]byte, n), literal: make([]bool, n), end: make([]bool, n), plain: make([]bool, n), ends: tok.EOS()}
	for _, id := range v.ends {
		if int(id) < n {
			v.end[id] = true
		}
	}
	for id := range n {
		_, b := tokenText(tok, int32(id))
		// A SentencePiece word start decodes alone without its space.
		if raw, ok := tok.Token(int32(id)); ok && strings.HasPrefix(raw, "▁") && (len(b) == 0 || b[0] != ' ') {
			b = append([]byte{' '}, b...)
		}
		v.bytes[id] = b
		v.literal[id] = tok.IsSpecial(int32(id))
		v.maxLen = max(v.maxLen, len(b))
		v.plain[id] = len(b) > 0 && !v.literal[id] && !v.end[id] && utf8.Valid(b)
		for _, x := range b {
			if x < 0x20 || x == 0x7F || x == '"' || x == '\\' {
				v.plain[id] = false
			}
		}
	}
	return v
}

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
func (g *toolGrammar) step(s *gstate, b byte) bool {
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

func (g *toolGrammar) literal(phase uint8) string {
	switch phase {
	case phPrefix:
		return g.prefix
	case phMid:
		return g.mid
	}
	return g.suffix
}

func (g *toolGrammar) stepJSON(s *gstate, b byte) bool {
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
func (g *toolGrammar) closer(s *gstate) byte {
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
// (none should exist; FuzzToolGrammar and the walks check).
const cannotFinish = 1 << 30

// completion is the number of bytes closer takes to finish from s.
func (g *toolGrammar) completion(s gstate) int {
	n := 0
	for s.phase != phEnd {
		if b := g.closer(&s); b == 0 || !g.step(&s, b) {
			return cannotFinish
		}
		n++
	}
	return n
}

// toolConstraint is the sampler.Constraint of a forced call.
type toolConstraint struct {
	g      *toolGrammar
	v      *vocab
	st     gstate
	budget int  // max_tokens; 0: none
	n      int  // tokens accepted
	off    bool // a token the grammar refused was drawn: no constraint from then on
}

func newToolConstraint(g *toolGrammar, v *vocab, maxTokens int) *toolConstraint {
	return &toolConstraint{g: g, v: v, budget: maxTokens}
}

// feed steps s over token id's bytes.
func (c *toolConstraint) feed(s *gstate, id int) bool {
	b := c.v.bytes[id]
	if len(b) == 0 || c.v.end[id] || s.phase == phEnd {
		return false
	}
	for _, x := range b {
		if c.v.literal[id] && (s.phase == phName || s.phase == phJSON) {
			return false
		}
		if !c.g.step(s, x) {
			return false
		}
	}
	return true
}

// Allow lets through the tokens that keep the reply on the grammar and,
// with a budget, leave enough tokens to finish it (one byte a token at
// worst). When the budget is too small for any, the grammar alone rules.
func (c *toolConstraint) Allow(allowed []bool) {
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
	if !c.allow(allowed, c.budget > 0, left) && c.budget > 0 {
		c.allow(allowed, false, left)
	}
}

// allow marks the tokens the grammar lets through and, with budget, that
// leave at most left-1 bytes to finish; it reports whether there is one.
func (c *toolConstraint) allow(allowed []bool, budget bool, left int) bool {
	base := c.g.completion(c.st)
	// Inside a string, a plain token changes nothing.
	inString := c.st.phase == phJSON && c.st.js == jString && c.st.more == 0
	some := false
	for id := range min(len(allowed), len(c.v.bytes)) {
		if inString && c.v.plain[id] {
			if !budget || base <= left-1 {
				allowed[id], some = true, true
			}
			continue
		}
		s := c.st
		if !c.feed(&s, id) {
			continue
		}
		// A byte adds at most 4 bytes to the completion (',' in an object
		// needs `"":0`): only tokens that could overrun are measured.
		if budget && base+4*len(c.v.bytes[id]) > left-1 && c.g.completion(s) > left-1 {
			continue
		}
		allowed[id], some = true, true
	}
	return some
}

// Accept advances past the token drawn.
func (c *toolConstraint) Accept(id int32) {
	c.n++
	if c.off || c.st.phase == phEnd && c.v.end[id] {
		return
	}
	if int(id) >= len(c.v.bytes) || !c.feed(&c.st, int(id)) {
		c.off = true
	}
}
