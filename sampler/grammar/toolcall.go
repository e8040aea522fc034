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
