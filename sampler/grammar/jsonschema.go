package grammar

import (
	"errors"
	"fmt"
	"math"
	"math/big"
)

// A JSON Schema is compiled (CompileSchema) into a pushdown automaton over
// the bytes of compact JSON (no whitespace), and a SchemaConstraint walks
// it over the vocabulary with a token trie. The automaton accepts a
// subset of the documents the schema validates, never a document it
// refuses, and every prefix it lets through can still be completed to a
// valid document.
//
// Supported keywords: type (a name or a list), properties, required,
// additionalProperties (false, true or a schema), enum, const, items
// (one schema), minItems, maxItems, anyOf and oneOf (the branches must
// differ in the first byte of their values: types apart, or enums with
// distinct first bytes), string minLength and maxLength (in code points),
// pattern (see below; not with minLength/maxLength), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (numbers), $ref to "#", "#/$defs/…"
// or "#/definitions/…" (not recursive), allOf with one schema, and the
// annotations title, description, default, examples, $comment, $schema,
// $id, deprecated, readOnly, writeOnly. Every other keyword is refused
// with a *SchemaError naming it: a keyword that constrains values is never
// silently ignored (format, not, if/then/else, patternProperties,
// propertyNames, min/maxProperties, uniqueItems, contains, prefixItems,
// multipleOf, …).
//
// What the automaton writes: compact JSON; objects with each property at
// most once; strings with escapes only where the schema leaves the string
// free (pattern strings carry no escapes, so a pattern that needs '"',
// '\' or a control character is refused when nothing else is left);
// integers of at most 15 digits; numbers of at most 12 integer and 6
// fraction digits, without exponent (bounds are exact on that grid);
// enum and const values in Go's canonical encoding (keys sorted).
//
// A pattern is an ECMA-262 regular expression of the simple-class subset:
// literal characters, '.', classes [...] and [^...] with ranges, the
// escapes \d \w \s \D \W \S and escaped punctuation, each with an
// optional quantifier ? * + {n} {n,} {n,m}; ^ and $ anchor it (without
// them it is searched for, as JSON Schema says). Groups and alternation
// are refused.

// Limits on a schema: its text, the schema objects in it, the nesting of
// the JSON it describes, an object's properties and a pattern's DFA.
const (
	MaxSchemaBytes  = 256 << 10
	MaxSchemaNodes  = 4096
	MaxSchemaNest   = 16 // nesting of objects and arrays in the JSON described
	maxProps        = 64
	maxPatternDFA   = 256
	maxSchemaDFA    = 4096
	maxPatternAtoms = 512
	maxEnumValues   = 1024
)

// ErrSchema is wrapped by every *SchemaError.
var ErrSchema = errors.New("grammar: unsupported or invalid JSON schema")

// SchemaError is a schema that cannot be compiled: a feature outside the
// supported subset, a malformed keyword, an unsatisfiable schema or one
// over a limit. Pointer is the JSON pointer of the schema object at fault.
type SchemaError struct {
	Pointer string // "" is the root
	Feature string // the keyword, or "size", "depth", …
	Msg     string
}

func (e *SchemaError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "#"
	} else {
		p = "#" + p
	}
	return fmt.Sprintf("grammar: JSON schema at %s: %s: %s", p, e.Feature, e.Msg)
}

func (e *SchemaError) Unwrap() error { return ErrSchema }

type nodeKind uint8

const (
	kObject nodeKind = iota
	kArray
	kString
	kNumber
	kLit
	kAnyOf
)

// node is one compiled schema; nodes form a graph (the any-value node is
// recursive). Read-only once compiled.
type node struct {
	kind nodeKind
	// kObject
	names      []string // sorted
	quoted     []int    // len(`"name":`) of each, as JSON-encoded
	props      []*node
	required   uint64 // bit i: names[i]
	additional *node  // nil: no other keys
	// kArray
	items              *node
	minItems, maxItems int
	// kString
	minLen, maxLen int // code points; maxLen < 0: none
	pat            *dfa
	// kNumber
	integer bool
	scale   int64 // 1 (integers) or 1e6
	maxInt  int   // integer digits at most
	lo, hi  int64 // scaled bounds, inclusive
	// kLit
	texts []string // sorted, unique
	// kAnyOf
	branches []*node
	pick     [256]int8 // branch of a first byte, -1: none
	// all
	min   int       // bytes of the shortest value
	first [256]bool // the first bytes of its values
	nest  int       // container nesting of its deepest value (0: a scalar)
}

// Schema is a compiled JSON Schema, read-only and shared by any number of
// SchemaConstraints.
type Schema struct {
	root *node
	text string
}

// String is the schema's text.
func (s *Schema) String() string { return s.text }

// AllowsObject reports whether the schema lets an object through.
func (s *Schema) AllowsObject() bool { return s.root.first['{'] }

// MinLen is the length in bytes of the shortest document the schema
// lets through.
func (s *Schema) MinLen() int { return s.root.min }

var (
	anyValue   = buildAny()
	objectOnly = &node{kind: kObject, additional: anyValue}
)

// JSONObjectSchema is any JSON object (OpenAI's response_format
// "json_object").
var JSONObjectSchema = func() *Schema {
	finish(objectOnly)
	objectOnly.min, objectOnly.nest = 2, 1
	return &Schema{root: objectOnly, text: `{"type":"object"}`}
}()

func buildAny() *node {
	any := &node{kind: kAnyOf}
	obj := &node{kind: kObject, additional: any}
	arr := &node{kind: kArray, items: any, maxItems: math.MaxInt32}
	str := &node{kind: kString, maxLen: -1}
	num := numberNode(false, nil, nil, false, false)
	lit := &node{kind: kLit, texts: []string{"false", "null", "true"}}
	any.branches = []*node{obj, arr, str, num, lit}
	for _, n := range []*node{str, num, lit} {
		finish(n)
	}
	obj.min, arr.min = 2, 2
	obj.first['{'], arr.first['['] = true, true
	setPick(any)
	any.min = 1
	return any
}

func setPick(n *node) bool {
	for i := range n.pick {
		n.pick[i] = -1
	}
	for bi, b := range n.branches {
		for c, ok := range b.first {
			if ok {
				if n.pick[c] >= 0 {
					return false
				}
				n.pick[c] = int8(bi)
				n.first[c] = true
			}
		}
	}
	return true
}

// numberNode is a number or integer node with optional bounds.
func numberNode(integer bool, lo, hi *big.Rat, loX, hiX bool) *node {
	n := &node{kind: kNumber, integer: integer, scale: 1, maxInt: 15}
	if !integer {
		n.scale, n.maxInt = 1_000_000, 12
	}
	maxMag := pow10(n.maxInt)*n.scale - 1
	n.lo, n.hi = -maxMag, maxMag
	s := new(big.Rat).SetInt64(n.scale)
	if lo != nil {
		v := new(big.Rat).Mul(lo, s)
		c := ratCeil(v)
		if loX && new(big.Rat).SetInt(c).Cmp(v) == 0 {
			c.Add(c, big.NewInt(1))
		}
		if c.IsInt64() {
			n.lo = max(n.lo, c.Int64())
		} else if c.Sign() > 0 {
			n.lo = maxMag + 1
		}
	}
	if hi != nil {
		v := new(big.Rat).Mul(hi, s)
		f := ratFloor(v)
		if hiX && new(big.Rat).SetInt(f).Cmp(v) == 0 {
			f.Sub(f, big.NewInt(1))
		}
		if f.IsInt64() {
			n.hi = min(n.hi, f.Int64())
		} else if f.Sign() < 0 {
			n.hi = -maxMag - 1
		}
	}
	return n
}

func ratFloor(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int)) // Euclidean: m ≥ 0
	_ = m
	return q
}

func ratCeil(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

var pow10s = func() (t [19]int64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

func pow10(k int) int64 { return pow10s[k] }

// finish computes a scalar node's min and first bytes.
func finish(n *node) {
	switch n.kind {
	case kObject:
		n.first['{'] = true
	case kArray:
		n.first['['] = true
	case kString:
		n.first['"'] = true
		if n.pat != nil {
			n.min = 2 + n.pat.dist[0]
		} else {
			n.min = 2 + n.minLen
		}
	case kNumber:
		var f frame
		f.n = n
		n.min = numRest(n, &f)
		if n.lo < 0 {
			n.first['-'] = true
		}
		for d := byte('0'); d <= '9'; d++ {
			g := frame{n: n, st: nsInt, intLen: 1, intVal: int64(d - '0')}
			if d == '0' {
				g.st = nsZero
			}
			if numRest(n, &g) < inf {
				n.first[d] = true
			}
		}
	case kLit:
		n.min = inf
		for _, t := range n.texts {
			n.min = min(n.min, len(t))
			n.first[t[0]] = true
		}
	}
}

const inf = 1 << 30
