package engine

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler/grammar"
)

// Response format types (OpenAI's response_format.type).
const (
	FormatText       = "text"        // free text (also "")
	FormatJSONObject = "json_object" // any JSON object
	FormatJSONSchema = "json_schema" // a document of ResponseFormat.Schema
)

// ResponseFormat asks for a reply that is one JSON document: any object,
// or a document of a JSON Schema (the subset grammar.CompileSchema
// supports). The reply is decoded under a grammar.SchemaConstraint, one
// per choice, so it is valid whatever the model would have written,
// unless max_tokens cuts it.
type ResponseFormat struct {
	Type   string // FormatText, FormatJSONObject or FormatJSONSchema
	Schema []byte // FormatJSONSchema: the schema's JSON text
}

// ErrResponseFormat is wrapped by the errors of a ResponseFormat that
// cannot apply: an unknown type, a schema that does not compile (the
// error also wraps its *grammar.SchemaError), a forced tool call or a
// caller's Constraint beside it.
var ErrResponseFormat = errcode.New(errcode.BadParams, "engine: bad response format")

// schemas caches compiled schemas (response formats and tool parameters)
// by text, for every LLM: a schema's pattern masks are kept per
// vocabulary.
var schemas = grammar.NewSchemaCache(256)

// WithResponseFormat makes the reply of Stream one JSON document, as
// ChatRequest.ResponseFormat does for a chat: each choice is decoded
// under its own grammar.SchemaConstraint (a caller's Constraint beside
// it is refused with ErrResponseFormat).
func WithResponseFormat(rf ResponseFormat) StreamOption {
	return func(r *Request) { r.format = &rf }
}

// key names the format's constraint for the inference cache: its type
// and schema text.
func (rf ResponseFormat) key() string { return "format:" + rf.Type + ":" + string(rf.Schema) }

// responseSchema is the compiled schema of rf: nil for free text.
func responseSchema(rf ResponseFormat) (*grammar.Schema, error) {
	switch rf.Type {
	case "", FormatText:
		return nil, nil
	case FormatJSONObject:
		return grammar.JSONObjectSchema, nil
	case FormatJSONSchema:
		if len(rf.Schema) == 0 {
			return nil, fmt.Errorf("%w: json_schema without a schema", ErrResponseFormat)
		}
		s, err := schemas.Compile(rf.Schema)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrResponseFormat, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: type %q; expected %q, %q or %q", ErrResponseFormat, rf.Type, FormatText, FormatJSONObject, FormatJSONSchema)
}
