package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// CompileSchema compiles the JSON text of a schema. Errors are
// *SchemaError (wrapping ErrSchema).
func CompileSchema(text []byte) (*Schema, error) {
	if len(text) > MaxSchemaBytes {
		return nil, &SchemaError{Feature: "size", Msg: fmt.Sprintf("the schema is %d bytes, more than %d", len(text), MaxSchemaBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, &SchemaError{Feature: "json", Msg: err.Error()}
	}
	if len(bytes.TrimSpace(text[dec.InputOffset():])) > 0 {
		return nil, &SchemaError{Feature: "json", Msg: "text after the schema"}
	}
	c := &compiler{root: doc, done: map[string]*node{}, busy: map[string]bool{}}
	n, err := c.compile(doc, "")
	if err != nil {
		return nil, err
	}
	if n.nest > MaxSchemaNest {
		return nil, &SchemaError{Feature: "depth", Msg: fmt.Sprintf("values nest %d deep, more than %d", n.nest, MaxSchemaNest)}
	}
	return &Schema{root: n, text: string(text)}, nil
}

type compiler struct {
	root      any
	nodes     int
	dfaStates int              // of all its patterns
	done      map[string]*node // compiled $ref targets
	busy      map[string]bool  // $refs being compiled: a cycle
}

var annotations = map[string]bool{"title": true, "description": true, "default": true, "examples": true,
	"$comment": true, "$schema": true, "$id": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true}

var handled = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true,
	"enum": true, "const": true, "items": true, "minItems": true, "maxItems": true, "anyOf": true, "oneOf": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"exclusiveMinimum": true, "exclusiveMaximum": true, "$ref": true, "allOf": true}

func ptr(p, key string) string {
	return p + "/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

func (c *compiler) compile(v any, p string) (*node, error) {
	if c.nodes++; c.nodes > MaxSchemaNodes {
		return nil, &SchemaError{Pointer: p, Feature: "size", Msg: fmt.Sprintf("more than %d schema objects", MaxSchemaNodes)}
	}
	bad := func(feature, format string, args ...any) error {
		return &SchemaError{Pointer: p, Feature: feature, Msg: fmt.Sprintf(format, args...)}
	}
	switch v := v.(type) {
	case bool:
		if v {
			return anyValue, nil
		}
		return nil, bad("false", "the schema false lets nothing through")
	case map[string]any:
		return c.object(v, p, bad)
	}
	return nil, bad("schema", "a schema must be an object or a boolean")
}

func (c *compiler) object(m map[string]any, p string, bad func(string, string, ...any) error) (*node, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !annotations[k] && !handled[k] {
			return nil, bad(k, "keyword %q is not supported", k)
		}
	}
	if r, ok := m["$ref"]; ok {
		if len(m) > 1 && !onlyAnnotations(m, "$ref") {
			return nil, bad("$ref", "$ref beside other keywords is not supported")
		}
		return c.ref(r, p, bad)
	}
	if a, ok := m["allOf"]; ok {
		list, _ := a.([]any)
		if len(list) != 1 || !onlyAnnotations(m, "allOf") {
			return nil, bad("allOf", "only allOf with one schema and no other keyword is supported")
		}
		return c.compile(list[0], ptr(p, "allOf")+"/0")
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if a, ok := m[k]; ok {
			if !onlyAnnotations(m, k) {
				return nil, bad(k, "%s beside other keywords is not supported", k)
			}
			list, _ := a.([]any)
			if len(list) == 0 {
				return nil, bad(k, "%s must be a non-empty array", k)
			}
			var bs []*node
			for i, s := range list {
				b, err := c.compile(s, fmt.Sprintf("%s/%d", ptr(p, k), i))
				if err != nil {
					return nil, err
				}
				bs = append(bs, b)
			}
			return union(bs, p, k)
		}
	}
	types, err := typeList(m, bad)
	if err != nil {
		return nil, err
	}
	if e, ok := m["enum"]; ok {
		list, _ := e.([]any)
		if len(list) == 0 {
			return nil, bad("enum", "enum must be a non-empty array")
		}
		return c.literal(m, list, types, p, bad)
	}
	if e, ok := m["const"]; ok {
		return c.literal(m, []any{e}, types, p, bad)
	}
	var bs []*node
	for _, t := range types {
		n, err := c.typed(m, t, p, bad)
		if err != nil {
			return nil, err
		}
		bs = append(bs, n)
	}
	if len(bs) == 1 {
		return bs[0], nil
	}
	return union(bs, p, "type")
}

func onlyAnnotations(m map[string]any, except string) bool {
	for k := range m {
		if k != except && !annotations[k] {
			return false
		}
	}
	return true
}

// typeList is the types a schema allows, from "type" or inferred from its
// keywords (a subset of what it allows: the automaton writes only these).
func typeList(m map[string]any, bad func(string, string, ...any) error) ([]string, error) {
	var types []string
	switch t := m["type"].(type) {
	case nil:
		switch {
		case has(m, "properties", "required", "additionalProperties"):
			types = []string{"object"}
		case has(m, "items", "minItems", "maxItems"):
			types = []string{"array"}
		case has(m, "pattern", "minLength", "maxLength"):
			types = []string{"string"}
		case has(m, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
			types = []string{"number"}
		default:
			types = []string{"object", "array", "string", "number", "boolean", "null"}
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, bad("type", "type must be a string or an array of strings")
			}
			types = append(types, s)
		}
	default:
		return nil, bad("type", "type must be a string or an array of strings")
	}
	if slices.Contains(types, "number") {
		types = slices.DeleteFunc(types, func(s string) bool { return s == "integer" })
	}
	slices.Sort(types)
	types = slices.Compact(types)
	if len(types) == 0 {
		return nil, bad("type", "no type")
	}
	for _, t := range types {
		if !slices.Contains([]string{"object", "array", "string", "number", "integer", "boolean", "null"}, t) {
			return nil, bad("type", "unknown type %q", t)
		}
	}
	return types, nil
}

func has(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func union(bs []*node, p, kw string) (*node, error) {
	if len(bs) == 1 {
		return bs[0], nil
	}
	if len(bs) > 100 {
		return nil, &SchemaError{Pointer: p, Feature: kw, Msg: "more than 100 branches"}
	}
	// Flatten nested unions, so the any node's branches count one by one.
	var flat []*node
	for _, b := range bs {
		if b.kind == kAnyOf {
			flat = append(flat, b.branches...)
		} else {
			flat = append(flat, b)
		}
	}
	n := &node{kind: kAnyOf, branches: flat, min: inf}
	if !setPick(n) {
		return nil, &SchemaError{Pointer: p, Feature: kw, Msg: "branches whose values can begin with the same byte are not supported (they must differ in type or first character)"}
	}
	for _, b := range flat {
		n.min = min(n.min, b.min)
		n.nest = max(n.nest, b.nest)
	}
	return n, nil
}

func (c *compiler) ref(r any, p string, bad func(string, string, ...any) error) (*node, error) {
	s, _ := r.(string)
	var target any
	switch {
	case s == "#":
		target = c.root
	case strings.HasPrefix(s, "#/$defs/") || strings.HasPrefix(s, "#/definitions/"):
		parts := strings.SplitN(s[2:], "/", 2)
		defs, _ := c.root.(map[string]any)[parts[0]].(map[string]any)
		name := strings.ReplaceAll(strings.ReplaceAll(parts[1], "~1", "/"), "~0", "~")
		t, ok := defs[name]
		if !ok {
			return nil, bad("$ref", "%q: no such definition", s)
		}
		target = t
	default:
		return nil, bad("$ref", "%q: only \"#\", \"#/$defs/NAME\" and \"#/definitions/NAME\" are supported", s)
	}
	if n, ok := c.done[s]; ok {
		return n, nil
	}
	if c.busy[s] {
		return nil, bad("$ref", "%q: recursive references are not supported", s)
	}
	c.busy[s] = true
	n, err := c.compile(target, s[1:])
	delete(c.busy, s)
	if err != nil {
		return nil, err
	}
	c.done[s] = n
	return n, nil
}

func (c *compiler) literal(m map[string]any, list []any, types []string, p string, bad func(string, string, ...any) error) (*node, error) {
	if len(list) > maxEnumValues {
		return nil, bad("enum", "more than %d values", maxEnumValues)
	}
	for k := range m {
		if k != "enum" && k != "const" && k != "type" && !annotations[k] {
			return nil, bad(k, "%s beside enum or const is not supported", k)
		}
	}
	n := &node{kind: kLit}
	for _, v := range list {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, bad("enum", "%v", err)
		}
		t := strings.TrimSuffix(b.String(), "\n")
		if ty := typeOf(v); !slices.Contains(types, ty) && !(ty == "integer" && slices.Contains(types, "number")) {
			continue // the type refuses it
		}
		n.texts = append(n.texts, t)
	}
	slices.Sort(n.texts)
	n.texts = slices.Compact(n.texts)
	if len(n.texts) == 0 {
		return nil, bad("enum", "no value of the allowed types")
	}
	finish(n)
	return n, nil
}

func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return "integer"
		}
		if r, ok := new(big.Rat).SetString(string(v)); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// relevant are the keywords of each type.
var relevant = map[string][]string{
	"object":  {"properties", "required", "additionalProperties"},
	"array":   {"items", "minItems", "maxItems"},
	"string":  {"pattern", "minLength", "maxLength"},
	"number":  {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
	"integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
}

func (c *compiler) typed(m map[string]any, t string, p string, bad func(string, string, ...any) error) (*node, error) {
	switch t {
	case "null":
		n := &node{kind: kLit, texts: []string{"null"}}
		finish(n)
		return n, nil
	case "boolean":
		n := &node{kind: kLit, texts: []string{"false", "true"}}
		finish(n)
		return n, nil
	case "object":
		return c.objectNode(m, p, bad)
	case "array":
		n := &node{kind: kArray, maxItems: math.MaxInt32}
		var err error
		n.items = anyValue
		if it, ok := m["items"]; ok {
			if n.items, err = c.compile(it, ptr(p, "items")); err != nil {
				return nil, err
			}
		}
		if n.minItems, err = count(m, "minItems", 0, bad); err != nil {
			return nil, err
		}
		if n.maxItems, err = count(m, "maxItems", math.MaxInt32, bad); err != nil {
			return nil, err
		}
		if n.minItems > n.maxItems {
			return nil, bad("minItems", "minItems %d > maxItems %d", n.minItems, n.maxItems)
		}
		if n.minItems > 1024 {
			return nil, bad("minItems", "minItems above 1024 is not supported")
		}
		n.min = 2 + n.minItems*n.items.min + max(n.minItems-1, 0)
		n.nest = 1 + n.items.nest
		if n.items == anyValue {
			n.nest = 1
		}
		finish(n)
		return n, nil
	case "string":
		n := &node{kind: kString}
		var err error
		if n.minLen, err = count(m, "minLength", 0, bad); err != nil {
			return nil, err
		}
		if n.maxLen, err = count(m, "maxLength", -1, bad); err != nil {
			return nil, err
		}
		if n.maxLen >= 0 && n.minLen > n.maxLen {
			return nil, bad("minLength", "minLength %d > maxLength %d", n.minLen, n.maxLen)
		}
		if n.minLen > 1<<16 {
			return nil, bad("minLength", "minLength above 65536 is not supported")
		}
		if pat, ok := m["pattern"]; ok {
			s, _ := pat.(string)
			if has(m, "minLength", "maxLength") {
				return nil, bad("pattern", "pattern with minLength or maxLength is not supported")
			}
			if n.pat, err = compilePattern(s); err != nil {
				return nil, bad("pattern", "%v", err)
			}
			if c.dfaStates += len(n.pat.next); c.dfaStates > maxSchemaDFA {
				return nil, bad("size", "the patterns need more than %d DFA states in all", maxSchemaDFA)
			}
		}
		finish(n)
		return n, nil
	}
	// number, integer
	var bounds [4]*big.Rat
	for i, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		v, ok := m[k]
		if !ok {
			continue
		}
		num, isNum := v.(json.Number)
		r, okr := new(big.Rat).SetString(string(num))
		if !isNum || !okr {
			return nil, bad(k, "%s must be a number", k)
		}
		bounds[i] = r
	}
	lo, loX := bounds[0], false
	if x := bounds[2]; x != nil && (lo == nil || x.Cmp(lo) >= 0) {
		lo, loX = x, true
	}
	hi, hiX := bounds[1], false
	if x := bounds[3]; x != nil && (hi == nil || x.Cmp(hi) <= 0) {
		hi, hiX = x, true
	}
	n := numberNode(t == "integer", lo, hi, loX, hiX)
	if n.lo > n.hi {
		return nil, bad("minimum", "no %s within the bounds (and the %d-digit limit)", t, n.maxInt)
	}
	finish(n)
	return n, nil
}

func count(m map[string]any, k string, def int, bad func(string, string, ...any) error) (int, error) {
	v, ok := m[k]
	if !ok {
		return def, nil
	}
	num, _ := v.(json.Number)
	i, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || i < 0 || i > math.MaxInt32 {
		return 0, bad(k, "%s must be a non-negative integer", k)
	}
	return int(i), nil
}

func (c *compiler) objectNode(m map[string]any, p string, bad func(string, string, ...any) error) (*node, error) {
	n := &node{kind: kObject, additional: anyValue}
	props, _ := m["properties"].(map[string]any)
	if _, ok := m["properties"]; ok && props == nil {
		return nil, bad("properties", "properties must be an object")
	}
	if len(props) > maxProps {
		return nil, bad("properties", "more than %d properties", maxProps)
	}
	for k := range props {
		n.names = append(n.names, k)
	}
	slices.Sort(n.names)
	for _, k := range n.names {
		pn, err := c.compile(props[k], ptr(ptr(p, "properties"), k))
		if err != nil {
			return nil, err
		}
		q, _ := json.Marshal(k)
		n.props = append(n.props, pn)
		n.quoted = append(n.quoted, len(q)+1)
		n.nest = max(n.nest, pn.nest)
	}
	if a, ok := m["additionalProperties"]; ok {
		if b, isBool := a.(bool); isBool && !b {
			n.additional = nil
		} else {
			an, err := c.compile(a, ptr(p, "additionalProperties"))
			if err != nil {
				return nil, err
			}
			n.additional = an
			if an != anyValue {
				n.nest = max(n.nest, an.nest)
			}
		}
	}
	if r, ok := m["required"]; ok {
		list, isList := r.([]any)
		if !isList {
			return nil, bad("required", "required must be an array of strings")
		}
		for _, x := range list {
			s, _ := x.(string)
			i, found := slices.BinarySearch(n.names, s)
			if !found {
				if n.additional == nil {
					return nil, bad("required", "%q is required but not allowed (additionalProperties is false)", s)
				}
				return nil, bad("required", "required property %q must be in properties", s)
			}
			n.required |= 1 << i
		}
	}
	n.nest++
	n.min = 2
	k := 0
	for i := range n.names {
		if n.required&(1<<i) != 0 {
			n.min += n.quoted[i] + n.props[i].min
			k++
		}
	}
	n.min += max(k-1, 0)
	finish(n)
	return n, nil
}
