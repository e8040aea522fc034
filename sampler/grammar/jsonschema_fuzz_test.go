package grammar

import (
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzCompileSchema: any text either compiles or is refused with a
// *SchemaError (no panic); a schema that compiles gives documents the
// reference validator accepts.
func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{nestedSchema, `{"type":"object"}`, `true`, `{"enum":[1,"a",null]}`,
		`{"type":"string","pattern":"^[a-z]{2,4}\\d?$"}`, `{"type":"number","minimum":-1e3,"exclusiveMaximum":0.001}`,
		`{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"array","items":{"$ref":"#/$defs/x"}}],"$defs":{"x":{"type":"boolean"}}}`,
		`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"const":[1,{"c":2}]}},"required":["b"]}},"required":["a"]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := CompileSchema([]byte(text))
		if err != nil {
			var se *SchemaError
			if !errors.As(err, &se) || !errors.Is(err, ErrSchema) {
				t.Fatalf("error %v is not a *SchemaError", err)
			}
			return
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			t.Fatalf("compiled but not JSON: %v", err)
		}
		c := jsonschema.NewCompiler()
		c.AddResource("mem://s.json", doc)
		v, err := c.Compile("mem://s.json")
		if err != nil {
			return // the validator refuses it (an ECMA regexp it reads otherwise, …)
		}
		h := fnv.New64a()
		h.Write([]byte(text))
		r := rand.New(rand.NewPCG(h.Sum64(), 7))
		for i := range 8 {
			d := randomDoc(t, r, s, 8*i)
			if err := validates(t, v, d); err != nil {
				t.Fatalf("schema %s\ndoc %s: %v", text, d, err)
			}
		}
	})
}

var fuzzSchemas = []string{nestedSchema, `{"type":"object"}`,
	`{"type":"array","items":{"type":"number","minimum":-2.5,"exclusiveMaximum":3},"maxItems":4}`,
	`{"type":"object","properties":{"k":{"type":"string","pattern":"[A-F]{2}é?$"},"n":{"type":"integer","minimum":-7,"maximum":-3},"s":{"type":"string","minLength":2,"maxLength":3}},"required":["k","n"],"additionalProperties":{"enum":[10,100,"x"]}}`}

// FuzzSchemaWalk: the fuzzer's bytes pick, step by step, one of the bytes
// the automaton takes; from there the shortest completion must finish the
// document in exactly completion() bytes, each lowering it by one, and
// the document must validate.
func FuzzSchemaWalk(f *testing.F) {
	f.Add(uint8(0), []byte("\x00\x05\x09\xff\x10"))
	f.Add(uint8(1), []byte("abcdefghijklmnop"))
	f.Add(uint8(3), []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09"))
	f.Fuzz(func(t *testing.T, which uint8, picks []byte) {
		sc := fuzzSchemas[int(which)%len(fuzzSchemas)]
		s := compile(t, sc)
		st := newState(s.root)
		var doc []byte
		for _, p := range picks {
			var next []byte
			for b := range 256 {
				c := st
				c.log = nil
				if c.step(byte(b)) {
					next = append(next, byte(b))
				}
			}
			if len(next) == 0 {
				break
			}
			b := next[int(p)%len(next)]
			st.step(b)
			doc = append(doc, b)
		}
		for want := st.completion(); want > 0; want-- {
			if want >= inf {
				t.Fatalf("dead state after %q", doc)
			}
			found := false
			for b := range 256 {
				c := st
				c.log = nil
				if c.step(byte(b)) && c.completion() == want-1 {
					st.step(byte(b))
					doc = append(doc, byte(b))
					found = true
					break
				}
			}
			if !found {
				t.Fatalf("after %q: no byte lowers the completion %d", doc, want)
			}
		}
		if err := validates(t, validator(t, sc), doc); err != nil {
			t.Fatalf("schema %s\ndoc %q: %v", sc, doc, err)
		}
	})
}
