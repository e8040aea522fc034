package grammar

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The reference validator is santhosh-tekuri/jsonschema (draft 2020-12,
// format as annotation): the tests check the automaton against a real
// validator rather than against a second implementation of ours.
func validator(tb testing.TB, schema string) *jsonschema.Schema {
	tb.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		tb.Fatalf("schema %s: %v", schema, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://schema.json", doc); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("mem://schema.json")
	if err != nil {
		tb.Fatalf("schema %s: %v", schema, err)
	}
	return s
}

func validates(tb testing.TB, v *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return v.Validate(inst)
}

func compile(tb testing.TB, schema string) *Schema {
	tb.Helper()
	s, err := CompileSchema([]byte(schema))
	if err != nil {
		tb.Fatalf("compile %s: %v", schema, err)
	}
	return s
}

// accepts feeds doc to the automaton: every byte taken and the document
// complete.
func accepts(s *Schema, doc string) bool {
	st := newState(s.root)
	for i := 0; i < len(doc); i++ {
		if !st.step(doc[i]) {
			return false
		}
	}
	return st.completion() == 0
}

const nestedSchema = `{
 "type": "object",
 "properties": {
  "id": {"type": "string", "pattern": "^[a-z0-9_-]+$"},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "score": {"type": "number", "exclusiveMinimum": -1.5, "maximum": 2.25},
  "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
  "owner": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "admin": {"type": "boolean"}},
            "required": ["name"], "additionalProperties": false},
  "note": {"anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]},
  "kind": {"$ref": "#/$defs/kind"}
 },
 "required": ["id", "age", "tags", "owner"],
 "additionalProperties": false,
 "$defs": {"kind": {"const": "user"}}
}`

func TestSchemaAccepts(t *testing.T) {
	cases := []struct {
		schema string
		docs   []string
	}{
		{nestedSchema, []string{
			`{"id":"ab_1","age":3,"tags":["red"],"owner":{"name":"x"}}`,
			`{"owner":{"admin":true,"name":""},"tags":["blue","red","red"],"age":150,"id":"-","kind":"user","note":null,"score":2.25}`,
			`{"id":"a","age":0,"tags":["red"],"owner":{"name":"x"},"score":-1.499999,"note":"hé"}`,
			`{"id":"A","age":3,"tags":["red"],"owner":{"name":"x"}}`,
			`{"id":"","age":3,"tags":["red"],"owner":{"name":"x"}}`,
			`{"id":"a","age":151,"tags":["red"],"owner":{"name":"x"}}`,
			`{"id":"a","age":-1,"tags":["red"],"owner":{"name":"x"}}`,
			`{"id":"a","age":1.5,"tags":["red"],"owner":{"name":"x"}}`,
			`{"id":"a","age":1,"tags":[],"owner":{"name":"x"}}`,
			`{"id":"a","age":1,"tags":["red","red","red","red"],"owner":{"name":"x"}}`,
			`{"id":"a","age":1,"tags":["pink"],"owner":{"name":"x"}}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{}}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"0123456789abc"}}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x","extra":1}}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x"},"extra":1}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x"},"score":-1.5}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x"},"score":2.250001}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x"},"note":"a"}`,
			`{"id":"a","age":1,"tags":["red"],"owner":{"name":"x"},"kind":"admin"}`,
			`{"id":"a","age":1,"tags":["red"]}`,
		}},
		{`{"type":"object"}`, []string{`{}`, `{"a":[1,{"b":null}],"":"\u00e9\n"}`, `[]`, `1`, `{"a":01}`}},
		{`{"type":["string","null"],"maxLength":2}`, []string{`"ab"`, `"abc"`, `null`, `1`, `"\n\""`}},
		{`{"type":"integer","exclusiveMinimum":10,"exclusiveMaximum":13}`, []string{`11`, `12`, `10`, `13`, `1`, `120`, `-11`}},
		{`{"type":"number","minimum":-0.5,"maximum":0.5}`, []string{`0`, `-0.5`, `0.5`, `0.25`, `-0`, `0.500001`, `1`, `-1`}},
		{`{"enum":[1,12,"x",null,{"b":1,"a":[true]}]}`, []string{`1`, `12`, `"x"`, `null`, `{"a":[true],"b":1}`, `2`, `121`, `"y"`}},
		{`{"type":"array","items":{"type":"string","pattern":"\\d{2,3}"},"maxItems":2}`, []string{`[]`, `["12"]`, `["a123b","99"]`, `["1"]`, `["1","2","3"]`}},
		{`{"type":"string","pattern":"^a.c$"}`, []string{`"abc"`, `"aéc"`, `"ac"`, `"a\nc"`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`,
			[]string{`{"a":1,"ab":true}`, `{"a":true}`, `{"b":false,"a":2}`, `{"b":1}`, `{"\u0061":true}`}},
		{`{"anyOf":[{"type":"object","properties":{"x":{"const":1}},"required":["x"],"additionalProperties":false},{"type":"array","items":{"type":"integer"}}]}`,
			[]string{`{"x":1}`, `[1,2]`, `{"x":2}`, `["a"]`, `{}`}},
		{`{"type":"boolean"}`, []string{`true`, `false`, `null`, `tru`}},
	}
	for _, c := range cases {
		s := compile(t, c.schema)
		v := validator(t, c.schema)
		for _, doc := range c.docs {
			want := validates(t, v, []byte(doc)) == nil
			if got := accepts(s, doc); got != want {
				t.Errorf("schema %.60s…\n  %s: automaton %v, validator %v", strings.Join(strings.Fields(c.schema), ""), doc, got, want)
			}
		}
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 20) + `{"type":"integer"}` + strings.Repeat("}", 20)
	big := `{"enum":["` + strings.Repeat("x", MaxSchemaBytes) + `"]}`
	cases := []struct{ schema, feature, pointer string }{
		{`{"not":{"type":"string"}}`, "not", ""},
		{`{"type":"string","format":"email"}`, "format", ""},
		{`{"type":"object","properties":{"a":{"type":"object","patternProperties":{"x":{}}}}}`, "patternProperties", "/properties/a"},
		{`{"if":{},"then":{}}`, "if", ""},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems", ""},
		{`{"type":"number","multipleOf":2}`, "multipleOf", ""},
		{`{"type":"object","minProperties":1}`, "minProperties", ""},
		{`{"type":"string","pattern":"(a|b)"}`, "pattern", ""},
		{`{"type":"string","pattern":"^a$","maxLength":3}`, "pattern", ""},
		{`{"type":"string","pattern":"^\"$"}`, "pattern", ""},
		{`{"anyOf":[{"type":"integer"},{"type":"number"}]}`, "anyOf", ""},
		{`{"anyOf":[{"type":"object"},{"type":"object","required":["a"],"properties":{"a":{}}}]}`, "anyOf", ""},
		{`{"$ref":"#/$defs/a","$defs":{"a":{"type":"object","properties":{"b":{"$ref":"#/$defs/a"}}}}}`, "$ref", "/$defs/a/properties/b"},
		{`{"$ref":"http://example.com/s.json"}`, "$ref", ""},
		{`{"$ref":"#/$defs/missing"}`, "$ref", ""},
		{`{"type":"integer","minimum":5,"maximum":4}`, "minimum", ""},
		{`{"type":"array","minItems":3,"maxItems":2}`, "minItems", ""},
		{`{"type":"object","required":["a"],"additionalProperties":false}`, "required", ""},
		{`{"enum":[]}`, "enum", ""},
		{`{"type":"string","enum":[1,2]}`, "enum", ""},
		{`{"type":"quaternion"}`, "type", ""},
		{`false`, "false", ""},
		{`{"properties":{"a":false}}`, "false", "/properties/a"},
		{`[1]`, "schema", ""},
		{`{"type":`, "json", ""},
		{deep, "depth", ""},
		{big, "size", ""},
		{`{"x-vendor":1}`, "x-vendor", ""},
	}
	for _, c := range cases {
		_, err := CompileSchema([]byte(c.schema))
		var se *SchemaError
		if !errors.Is(err, ErrSchema) || !errors.As(err, &se) {
			t.Errorf("%.80s: error %v, want a *SchemaError", c.schema, err)
			continue
		}
		if se.Feature != c.feature || se.Pointer != c.pointer {
			t.Errorf("%.80s: feature %q at %q, want %q at %q (%v)", c.schema, se.Feature, se.Pointer, c.feature, c.pointer, err)
		}
	}
}

// randomDoc walks the automaton byte by byte, each byte drawn among those
// it takes; past maxBytes only bytes on a shortest way to the end. Every
// state on the way must be able to finish.
func randomDoc(tb testing.TB, r *rand.Rand, s *Schema, maxBytes int) []byte {
	st := newState(s.root)
	var doc []byte
	for !st.done() {
		c := st.completion()
		if c >= inf {
			tb.Fatalf("dead state after %q", doc)
		}
		if c == 0 && (len(doc) > maxBytes || r.IntN(4) == 0) {
			break
		}
		var next []byte
		for b := range 256 {
			t := st
			if t.step(byte(b)) && (len(doc) <= maxBytes || t.completion() < c) {
				next = append(next, byte(b))
			}
		}
		if len(next) == 0 && c == 0 {
			break // a number at the top: only the end may follow
		}
		if len(next) == 0 {
			tb.Fatalf("no byte after %q (completion %d)", doc, c)
		}
		b := next[r.IntN(len(next))]
		if !st.step(b) {
			tb.Fatal("step refused a byte it took")
		}
		doc = append(doc, b)
	}
	return doc
}

// TestSchemaRandomDocs draws documents from the automaton: each must be
// valid JSON that the reference validator accepts.
func TestSchemaRandomDocs(t *testing.T) {
	schemas := []string{nestedSchema, `{"type":"object"}`, `true`,
		`{"type":"array","items":{"type":"number","minimum":-2.5,"exclusiveMaximum":3},"minItems":2,"maxItems":4}`,
		`{"type":"object","properties":{"k":{"type":"string","pattern":"[A-F]{2}x?$"},"n":{"type":"integer","minimum":-7,"maximum":-3}},"required":["k","n"]}`,
		`{"type":"string","minLength":3,"maxLength":5}`,
		`{"enum":[1,12,123,"a",[1,2]]}`,
		`{"type":"object","properties":{"a":{"type":"string"},"ab":{"type":"integer"},"abc":{"type":"null"}},"required":["ab"],"additionalProperties":{"type":"boolean"}}`,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, sc := range schemas {
		s := compile(t, sc)
		v := validator(t, sc)
		for i := range 200 {
			doc := randomDoc(t, r, s, 20+i)
			if err := validates(t, v, doc); err != nil {
				t.Fatalf("schema %s\ndoc %s: %v", sc, doc, err)
			}
		}
	}
}

func TestPatternDFA(t *testing.T) {
	cases := []struct {
		pat      string
		ok, fail []string
	}{
		{`^[a-z0-9_-]+$`, []string{"a", "a-b_9"}, []string{"", "A", "a b"}},
		{`^\d{3}-\d{4}$`, []string{"555-1234"}, []string{"5551234", "555-123"}},
		{`ab`, []string{"ab", "xxabyy"}, []string{"a", "ba"}},
		{`^[^x]*$`, []string{"", "abc", "é"}, []string{"x", "axb"}},
		{`^a?b*c+$`, []string{"c", "abbc", "bcc"}, []string{"", "ab", "aabc"}},
		{`^.{2,3}$`, []string{"ab", "abc"}, []string{"a", "abcd"}},
		{`^\w\s\W$`, []string{"a !"}, []string{"a a!", "a\u00a0!"}},
		{`^[^\s]\S$`, []string{"ab"}, []string{"a\u00a0", "\u00a0b", " b"}},
	}
	for _, c := range cases {
		d, err := compilePattern(c.pat)
		if err != nil {
			t.Fatalf("%s: %v", c.pat, err)
		}
		match := func(s string) bool {
			q := int32(0)
			for _, r := range s {
				if q = d.step(q, r); q < 0 {
					return false
				}
			}
			return d.accept[q]
		}
		for _, s := range c.ok {
			if !match(s) {
				t.Errorf("%s refused %q", c.pat, s)
			}
		}
		for _, s := range c.fail {
			if match(s) {
				t.Errorf("%s took %q", c.pat, s)
			}
		}
	}
}

func ExampleCompileSchema() {
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(s.MinLen(), accepts(s, `{"n":7}`), accepts(s, `{"n":0}`))
	_, err = CompileSchema([]byte(`{"type":"string","format":"email"}`))
	fmt.Println(err)
	// Output:
	// 7 true false
	// grammar: JSON schema at #: format: keyword "format" is not supported
}

func TestSchemaCache(t *testing.T) {
	c := NewSchemaCache(2)
	a1, err := c.Compile([]byte(`{"type":"integer"}`))
	if err != nil {
		t.Fatal(err)
	}
	if a2, _ := c.Compile([]byte(`{"type":"integer"}`)); a2 != a1 {
		t.Error("a second compile of the same text did not hit")
	}
	c.Compile([]byte(`{"type":"string"}`))
	c.Compile([]byte(`{"type":"integer"}`)) // a is now the most recent
	c.Compile([]byte(`{"type":"null"}`))    // drops string
	if a3, _ := c.Compile([]byte(`{"type":"integer"}`)); a3 != a1 || c.Len() != 2 {
		t.Errorf("LRU order: hit %v, len %d", a3 == a1, c.Len())
	}
	if _, err := c.Compile([]byte(`{"not":{}}`)); !errors.Is(err, ErrSchema) || c.Len() != 2 {
		t.Errorf("bad schema: %v, len %d", err, c.Len())
	}
}

// TestCompileSchemaBounded: hostile schemas within the size limit are
// refused or compiled quickly, their patterns' DFAs bounded in all.
func TestCompileSchemaBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 60 {
		fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":"^(?:x)?%s$"},`, i, strings.Repeat("[a-c]?", 100))
	}
	b.WriteString(`"z":{}}}`)
	if _, err := CompileSchema([]byte(b.String())); !errors.Is(err, ErrSchema) {
		t.Errorf("groups: %v", err)
	}
	b.Reset()
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 60 {
		fmt.Fprintf(&b, `"p%d":{"type":"string","pattern":"^[ab]{150}$"},`, i) // 151 states each
	}
	b.WriteString(`"z":{}}}`)
	var se *SchemaError
	if _, err := CompileSchema([]byte(b.String())); !errors.As(err, &se) || se.Feature != "size" {
		t.Errorf("many big patterns: %v", err)
	}
}
