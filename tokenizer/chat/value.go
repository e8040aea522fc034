package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Template values. What the template sees is built from plain Go values:
//
//	string, bool, int (a JSON integer that fits int64), float64, nil,
//	pyList (a list), *exec.Dict (a dict: ordered pairs, like a Python dict).
//
// gonja sorts the keys of a Go map, so every dict the template can see is an
// *exec.Dict; its keys are strings.

// pyList is a list. gonja's own indexing misses x[-len(x)] (x[-1] of a
// one-item list is undefined); a pyList indexes as Python does. Lists that
// gonja builds itself (list literals, slices with a step, concatenations)
// keep gonja's indexing.
type pyList []any

// GetItem is x[i] with Python's negative indices; out of range is undefined,
// as in Jinja.
func (l pyList) GetItem(key any) (*exec.Value, bool) {
	i, ok := key.(int)
	if !ok {
		return exec.AsValue(nil), false
	}
	if i < 0 {
		i += len(l)
	}
	if i < 0 || i >= len(l) {
		return exec.AsValue(nil), false
	}
	return exec.ToValue(l[i]), true
}

// String is str(list): Python's repr of the items.
func (l pyList) String() string { return pyRepr([]any(l)) }

// dict is a small builder for an ordered *exec.Dict.
type dict struct{ d *exec.Dict }

func newDict() dict { return dict{exec.NewDict()} }

// set replaces the value of key in place, or appends key (Python dict
// assignment).
func (d dict) set(key string, value any) dict {
	for _, p := range d.d.Pairs {
		if p.Key.IsString() && p.Key.String() == key {
			p.Value = exec.AsValue(value)
			return d
		}
	}
	d.d.Pairs = append(d.d.Pairs, &exec.Pair{Key: exec.AsValue(key), Value: exec.AsValue(value)})
	return d
}

// maxJSONDepth bounds the nesting of JSON given to a template (the decoder
// below is recursive).
const maxJSONDepth = 200

var errJSONDepth = errors.New("JSON nested too deeply")

// parseJSON decodes one JSON value into template values, keeping object key
// order and Python's view of numbers (integers stay integers).
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSONDepth
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := newDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				d.set(key, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d.d, nil
		case '[':
			list := pyList{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return list, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return jsonNumber(string(t)), nil
	default: // string, bool, nil
		return t, nil
	}
}

// jsonNumber is Python's json.loads view of a number: an integer literal is
// an int, anything else a float. Integers beyond int64 become floats (Python
// would keep them exact).
func jsonNumber(s string) any {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return int(i)
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return s
	}
	return f
}

// toValue converts a Go value given in Input.Kwargs to a template value:
// json.RawMessage is decoded keeping key order; maps become dicts with sorted
// keys; slices become lists; numbers become int or float64.
func toValue(v any) (any, error) {
	return toValueDepth(v, 0)
}

func toValueDepth(v any, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSONDepth
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return parseJSON(t)
	case string, bool, int, float64, *exec.Dict, pyList:
		return t, nil
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		r := reflect.ValueOf(t)
		if r.CanInt() {
			return int(r.Int()), nil
		}
		if u := r.Uint(); u <= math.MaxInt64 {
			return int(u), nil
		}
		return float64(r.Uint()), nil
	case float32:
		return float64(t), nil
	case json.Number:
		return jsonNumber(string(t)), nil
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Slice, reflect.Array:
		list := make(pyList, r.Len())
		for i := range list {
			x, err := toValueDepth(r.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			list[i] = x
		}
		return list, nil
	case reflect.Map:
		if r.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%w: map keys must be strings, got %s", ErrBadKwarg, r.Type())
		}
		keys := make([]string, 0, r.Len())
		for _, k := range r.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		d := newDict()
		for _, k := range keys {
			x, err := toValueDepth(r.MapIndex(reflect.ValueOf(k).Convert(r.Type().Key())).Interface(), depth+1)
			if err != nil {
				return nil, err
			}
			d.set(k, x)
		}
		return d.d, nil
	case reflect.Pointer:
		if r.IsNil() {
			return nil, nil
		}
		return toValueDepth(r.Elem().Interface(), depth+1)
	}
	return nil, fmt.Errorf("%w: unsupported value of type %T", ErrBadKwarg, v)
}

// messageValue is the dict transformers hands the template for m: role,
// content, then the optional keys, with reasoning aliased as in
// transformers' _alias_reasoning_fields ({"thinking": r, **message,
// "reasoning_content": r}).
func messageValue(m *Message) (*exec.Dict, error) {
	d := newDict()
	if m.ReasoningContent != "" {
		d.set("thinking", m.ReasoningContent)
	}
	d.set("role", m.Role)
	d.set("content", m.Text())
	if len(m.ToolCalls) > 0 {
		calls := make(pyList, len(m.ToolCalls))
		for i := range m.ToolCalls {
			calls[i] = toolCallValue(&m.ToolCalls[i])
		}
		d.set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		d.set("tool_call_id", m.ToolCallID)
	}
	if m.Name != "" {
		d.set("name", m.Name)
	}
	if m.ReasoningContent != "" {
		d.set("reasoning_content", m.ReasoningContent)
	}
	return d.d, nil
}

// toolCallValue is {"id"?, "type", "function": {"name", "arguments"}};
// arguments is the decoded JSON object, or the raw string when it is not one.
func toolCallValue(c *ToolCall) *exec.Dict {
	d := newDict()
	if c.ID != "" {
		d.set("id", c.ID)
	}
	typ := c.Type
	if typ == "" {
		typ = "function"
	}
	d.set("type", typ)
	var args any = c.Function.Arguments
	if v, err := parseJSON([]byte(c.Function.Arguments)); err == nil {
		if _, ok := v.(*exec.Dict); ok {
			args = v
		}
	}
	d.set("function", newDict().set("name", c.Function.Name).set("arguments", args).d)
	return d.d
}

// toolValue is {"type", "function": {"name", "description"?, "parameters"?}}.
func toolValue(t *Tool) (*exec.Dict, error) {
	typ := t.Type
	if typ == "" {
		typ = "function"
	}
	f := newDict().set("name", t.Function.Name)
	if t.Function.Description != "" {
		f.set("description", t.Function.Description)
	}
	if p := bytes.TrimSpace(t.Function.Parameters); len(p) > 0 {
		v, err := parseJSON(p)
		if err != nil {
			return nil, fmt.Errorf("%w: parameters of tool %q: %v", ErrBadKwarg, t.Function.Name, err)
		}
		f.set("parameters", v)
	}
	return newDict().set("type", typ).set("function", f.d).d, nil
}
