package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// personSchema leaves its objects open and lists its properties out of
// alphabetical order; nick is optional.
const personSchema = `{"type":"object","properties":{
 "name":{"type":"string","maxLength":6},
 "age":{"type":"integer","minimum":0,"maximum":120},
 "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street","city"]},
 "nick":{"type":"string"},
 "active":{"type":"boolean"}},
 "required":["name","age","address","active"]}`

func compileStrict(tb testing.TB, schema string) *Schema {
	tb.Helper()
	s, err := CompileStrictSchema([]byte(schema))
	if err != nil {
		tb.Fatalf("compile %s: %v", schema, err)
	}
	return s
}

// TestStrictSchema: under CompileStrictSchema every object is closed and
// its properties come in the schema's order (optional ones may be left
// out); CompileSchema reads the same schema as open, in any order.
func TestStrictSchema(t *testing.T) {
	strict, open := compileStrict(t, personSchema), compile(t, personSchema)
	for _, c := range []struct {
		doc          string
		strict, open bool
	}{
		{`{"name":"a","age":1,"address":{"street":"s","city":"c"},"nick":"n","active":true}`, true, true},
		{`{"name":"a","age":1,"address":{"street":"s","city":"c"},"active":true}`, true, true},
		{`{"age":1,"name":"a","address":{"street":"s","city":"c"},"active":true}`, false, true},
		{`{"name":"a","age":1,"address":{"city":"c","street":"s"},"active":true}`, false, true},
		{`{"name":"a","age":1,"address":{"street":"s","city":"c"},"active":true,"nick":"n"}`, false, true},
		{`{"name":"a","age":1,"address":{"street":"s","city":"c","zip":1},"active":true}`, false, true},
		{`{"name":"a","age":1,"address":{"street":"s","city":"c"},"active":true,"x":1}`, false, true},
		{`{"name":"a","age":1,"address":{"street":"s","city":"c"},"active":true,"x":1,"x":2}`, false, false},
		{`{"name":"a","name":"b","age":1,"address":{"street":"s","city":"c"},"active":true}`, false, false},
	} {
		if got := accepts(strict, c.doc); got != c.strict {
			t.Errorf("strict %s: %v", c.doc, got)
		}
		if got := accepts(open, c.doc); got != c.open {
			t.Errorf("open %s: %v", c.doc, got)
		}
	}
	// A required property cannot be passed: "active" first leaves no way
	// to write "name".
	st := newState(strict.root)
	for _, b := range []byte(`{"`) {
		st.step(b)
	}
	if st.step('a') && st.step('c') {
		t.Error(`strict: "ac…" taken before the required "name"`)
	}

	if _, err := CompileStrictSchema([]byte(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("strict with additionalProperties true: %v", err)
	}
	if _, err := CompileStrictSchema([]byte(`{"type":"object","additionalProperties":{"type":"string"}}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("strict with an additionalProperties schema: %v", err)
	}
	// The cache keeps the two readings apart.
	sc := NewSchemaCache(4)
	a, _ := sc.Compile([]byte(personSchema))
	b, _ := sc.CompileStrict([]byte(personSchema))
	if a == b || a.root.before != nil || b.root.before == nil || sc.Len() != 2 {
		t.Errorf("cache: the strict and the open schema are one (%p %p, %d kept)", a, b, sc.Len())
	}
}

// TestNoDuplicateKeys: no object takes a key twice, whatever the mode:
// json_object's, a schema's open object (a key beside the property
// names), keys spelled with escapes; the same key in two objects is
// fine.
func TestNoDuplicateKeys(t *testing.T) {
	open := compile(t, `{"type":"object","properties":{"p":{"type":"integer"}},"additionalProperties":{}}`)
	for _, c := range []struct {
		s    *Schema
		doc  string
		want bool
	}{
		{JSONObjectSchema, `{"a":1,"b":2}`, true},
		{JSONObjectSchema, `{"a":1,"a":2}`, false},
		{JSONObjectSchema, `{"":1,"":2}`, false},
		{JSONObjectSchema, `{"a":1,"\u0061":2}`, false},
		{JSONObjectSchema, `{"\n":1,"\u000a":2}`, false},
		{JSONObjectSchema, `{"é":1,"\u00e9":2}`, false},
		{JSONObjectSchema, `{"a\"":1,"a\u0022":2}`, false},
		{JSONObjectSchema, `{"a":1,"ab":2,"b":3}`, true},
		{JSONObjectSchema, `{"x":{"a":1,"a":2}}`, false},
		{JSONObjectSchema, `{"a":{"a":1},"b":{"a":1}}`, true},
		{JSONObjectSchema, `{"a":1,"b":{"c":1},"c":2}`, true},
		{JSONObjectSchema, `{"a":[{"a":1},{"a":1}],"b":1}`, true},
		{JSONObjectSchema, `{"a":[{"a":1,"a":1}]}`, false},
		{JSONObjectSchema, `{"a":{"b":{"c":1}},"b":{"b":1,"c":{"c":1}},"c":1,"a":2}`, false},
		{open, `{"p":1,"q":2,"r":3}`, true},
		{open, `{"q":1,"p":2,"q":3}`, false},
		{open, `{"p":1,"p":2}`, false},
		{open, `{"":1,"":2}`, false},
	} {
		if got := accepts(c.s, c.doc); got != c.want {
			t.Errorf("%s %s: %v", c.s.text, c.doc, got)
		}
	}

	// A walk's undo keeps the keys of the objects it passes: a try that
	// closes the inner object and writes an outer key, taken back, leaves
	// the inner object's "b" known.
	st := newState(JSONObjectSchema.root)
	for _, b := range []byte(`{"a":{"b":1`) {
		if !st.step(b) {
			t.Fatal("refused")
		}
	}
	m := st.begin()
	for _, b := range []byte(`},"bb":{"b":2`) {
		if !st.step(b) {
			t.Fatal("refused in the try")
		}
	}
	st.undo(m)
	st.logging = false
	for _, b := range []byte(`,"b"`) {
		if !st.step(b) {
			return // refused: right
		}
	}
	t.Error(`the inner object took "b" twice after an undo`)
}

// checkKeys reads doc and reports a key written twice in an object; with
// order (the names of each object by path, in the schema's order), also
// a key it does not name or one out of its order.
func checkKeys(doc []byte, order map[string][]string) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var value func(path string) error
	value = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				kt, _ := dec.Token()
				k := kt.(string)
				if slices.Contains(keys, k) {
					return fmt.Errorf("%q: key %q twice", path, k)
				}
				if order != nil {
					i := slices.Index(order[path], k)
					if i < 0 || len(keys) > 0 && slices.Index(order[path], keys[len(keys)-1]) > i {
						return fmt.Errorf("%q: key %q not a property or out of order", path, k)
					}
				}
				keys = append(keys, k)
				if err := value(path + "/" + k); err != nil {
					return err
				}
			}
		case json.Delim('['):
			for dec.More() {
				if err := value(path + "/*"); err != nil {
					return err
				}
			}
		default:
			return nil
		}
		_, err = dec.Token()
		return err
	}
	if err := value(""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("text after the document")
	}
	return nil
}

// TestStrictRandomDocs draws documents from the automata (randomDoc also
// checks that the completion never claims a way out that is not there):
// json_object's have no key twice; the strict schema's validate against
// it with every object closed, in the schema's order.
func TestStrictRandomDocs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		doc := randomDoc(t, r, JSONObjectSchema, 10+i/4)
		if err := checkKeys(doc, nil); err != nil {
			t.Fatalf("json_object %s: %v", doc, err)
		}
	}
	closed := `{"type":"object","properties":{
 "name":{"type":"string","maxLength":6},
 "age":{"type":"integer","minimum":0,"maximum":120},
 "address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}},"required":["street","city"],"additionalProperties":false},
 "nick":{"type":"string"},
 "active":{"type":"boolean"}},
 "required":["name","age","address","active"],"additionalProperties":false}`
	v := validator(t, closed)
	order := map[string][]string{"": {"name", "age", "address", "nick", "active"}, "/address": {"street", "city"}}
	s := compileStrict(t, personSchema)
	for i := range 200 {
		doc := randomDoc(t, r, s, 20+i)
		if err := validates(t, v, doc); err != nil {
			t.Fatalf("strict %s: %v", doc, err)
		}
		if err := checkKeys(doc, order); err != nil {
			t.Fatalf("strict %s: %v", doc, err)
		}
	}
}
