package gguf

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
)

// Files written by the Python gguf package (tools/make_gguf_vectors.py) and
// what they hold.
const pyDir = "../../testdata/gguf/"

type pyWant struct {
	Version    uint32
	Alignment  int
	DataOffset int64 `json:"data_offset"`
	KV         []struct {
		Key   string
		Type  string
		Value json.RawMessage
	}
	Tensors []struct {
		Name   string
		Type   uint32
		NE     []int64
		Offset int64 // absolute
		Hex    string
	}
}

// jsonValue converts a value of the JSON file to the Go value Parse gives.
func jsonValue(t ValueType, raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	return goValue(t, x)
}

func goValue(t ValueType, x any) (any, error) {
	num := func() string { n, _ := x.(json.Number); return string(n) }
	u := func(bits int) (uint64, error) { return strconv.ParseUint(num(), 10, bits) }
	i := func(bits int) (int64, error) { return strconv.ParseInt(num(), 10, bits) }
	var v any
	var err error
	switch t {
	case Uint8:
		n, e := u(8)
		v, err = uint8(n), e
	case Int8:
		n, e := i(8)
		v, err = int8(n), e
	case Uint16:
		n, e := u(16)
		v, err = uint16(n), e
	case Int16:
		n, e := i(16)
		v, err = int16(n), e
	case Uint32:
		n, e := u(32)
		v, err = uint32(n), e
	case Int32:
		n, e := i(32)
		v, err = int32(n), e
	case Uint64:
		v, err = u(64)
	case Int64:
		v, err = i(64)
	case Float32:
		f, e := strconv.ParseFloat(num(), 64)
		if float64(float32(f)) != f {
			e = fmt.Errorf("%v is not a float32", f)
		}
		v, err = float32(f), e
	case Float64:
		v, err = strconv.ParseFloat(num(), 64)
	case Bool, String:
		v = x
	case ArrayType:
		return goArray(x)
	default:
		return nil, fmt.Errorf("type %v", t)
	}
	return v, err
}

// goArray converts {"elem": "INT32", "values": [...]} to an Array.
func goArray(x any) (Array, error) {
	m, _ := x.(map[string]any)
	name, _ := m["elem"].(string)
	elem, ok := ParseValueType(name)
	values, isList := m["values"].([]any)
	if !ok || !isList {
		return Array{}, fmt.Errorf("bad array %v", x)
	}
	// A slice of the element's Go type: make one by appending the values
	// through reflection.
	var zero any
	switch elem {
	case ArrayType:
		zero = Array{}
	case Uint8:
		zero = uint8(0)
	case Int8:
		zero = int8(0)
	case Uint16:
		zero = uint16(0)
	case Int16:
		zero = int16(0)
	case Uint32:
		zero = uint32(0)
	case Int32:
		zero = int32(0)
	case Float32:
		zero = float32(0)
	case Bool:
		zero = false
	case String:
		zero = ""
	case Uint64:
		zero = uint64(0)
	case Int64:
		zero = int64(0)
	case Float64:
		zero = float64(0)
	}
	s := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(zero)), 0, len(values))
	for _, e := range values {
		v, err := goValue(elem, e)
		if err != nil {
			return Array{}, err
		}
		s = reflect.Append(s, reflect.ValueOf(v))
	}
	return Array{elem, s.Interface()}, nil
}

func TestPythonFiles(t *testing.T) {
	for _, stem := range []string{"python", "python_v2", "python_iq4"} {
		t.Run(stem, func(t *testing.T) {
			raw, err := os.ReadFile(pyDir + stem + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var want pyWant
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			f, err := Open(pyDir + stem + ".gguf")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != want.Version || f.Alignment != want.Alignment || f.DataOffset != want.DataOffset {
				t.Errorf("version %d alignment %d data offset %d; want %d %d %d",
					f.Version, f.Alignment, f.DataOffset, want.Version, want.Alignment, want.DataOffset)
			}
			var kv []KV
			for _, e := range want.KV {
				typ, ok := ParseValueType(e.Type)
				if !ok {
					t.Fatalf("%s: type %q", e.Key, e.Type)
				}
				v, err := jsonValue(typ, e.Value)
				if err != nil {
					t.Fatalf("%s: %v", e.Key, err)
				}
				kv = append(kv, KV{e.Key, Value{typ, v}})
			}
			if len(f.KV) != len(kv) {
				t.Errorf("%d keys, want %d", len(f.KV), len(kv))
			}
			for i := range min(len(f.KV), len(kv)) {
				if !reflect.DeepEqual(f.KV[i], kv[i]) {
					t.Errorf("entry %d: got %#v, want %#v", i, f.KV[i], kv[i])
				}
			}
			if len(f.Tensors()) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				ti, got := f.TensorInfos()[i], f.Tensors()[i]
				data, _ := hex.DecodeString(w.Hex)
				dt, _ := TypeOf(w.Type)
				shape := make([]int64, len(w.NE))
				for j, d := range w.NE {
					shape[len(w.NE)-1-j] = d
				}
				if ti.Name != w.Name || ti.Type != w.Type || !reflect.DeepEqual(ti.NE, w.NE) || f.DataOffset+int64(ti.Offset) != w.Offset {
					t.Errorf("info %d: %s type %d ne %v offset %d; want %s %d %v %d", i, ti.Name, ti.Type, ti.NE, f.DataOffset+int64(ti.Offset), w.Name, w.Type, w.NE, w.Offset)
				}
				if got.Name != w.Name || got.DType != dt || !reflect.DeepEqual(got.Shape, shape) || !bytes.Equal(got.Data, data) {
					t.Errorf("tensor %s: %v %v, data equal %v; want %v %v", got.Name, got.DType, got.Shape, bytes.Equal(got.Data, data), dt, shape)
				}
			}
			// Write lays a file out as gguf-py does: the same bytes.
			pyBytes, _ := os.ReadFile(pyDir + stem + ".gguf")
			if mine := encode(t, f.KV, f.Tensors(), f.Version); !bytes.Equal(mine, pyBytes) {
				t.Errorf("Write of the parsed file (%d bytes) differs from gguf-py's (%d bytes)", len(mine), len(pyBytes))
			}
		})
	}
}

func TestPythonRefused(t *testing.T) {
	_, err := Open(pyDir + "python_be.gguf")
	var ve *VersionError
	if !errors.As(err, &ve) || !ve.BigEndian || errcode.Of(err) != errcode.ABIMismatch || !strings.Contains(err.Error(), "big-endian") {
		t.Errorf("big-endian file: %v", err)
	}
	_, err = Open(pyDir + "python_iq.gguf")
	var ue *tensor.UnsupportedDTypeError
	if !errors.As(err, &ue) || ue.Tensor != "w.iq2_xxs" || !strings.Contains(ue.DType, "IQ2_XXS") || !strings.Contains(err.Error(), "python_iq.gguf") {
		t.Errorf("IQ2_XXS file: %v", err)
	}
}
