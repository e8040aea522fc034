package engine

import (
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
)

// Response format types (OpenAI's response_format.type).
const (
	FormatText       = "text"        // free text (also "")
	FormatJSONObject = "json_object" // any JSON object
	FormatJSONSchema = "json_schema" // a document of ResponseFormat.Schema
)

// ResponseFormat asks for a reply that is one JSON document: any object,
// or a document of a JSON Schema (the subset sampler.CompileSchema
// supports). The reply is decoded under a sampler.SchemaConstraint, one
// per choice, so it is valid whatever the model would have written,
// unless max_tokens cuts it.
type ResponseFormat struct {
	Type   string // FormatText, FormatJSONObject or FormatJSONSchema
	Schema []byte // FormatJSONSchema: the schema's JSON text
}

// ErrResponseFormat is wrapped by the errors of a ResponseFormat that
// cannot apply: an unknown type, a schema that does not compile (the
// error also wraps its *sampler.SchemaError), a forced tool call or a
// caller's Constraint beside it.
var ErrResponseFormat = errcode.New(errcode.BadParams, "engine: bad response format")

// schemas caches compiled schemas (response formats and tool parameters)
// by text, for every LLM: a schema's pattern masks are kept per
// vocabulary.
var schemas = sampler.NewSchemaCache(256)

// ResponseSchema is the compiled schema of rf: nil for free text.
func ResponseSchema(rf ResponseFormat) (*sampler.Schema, error) {
	switch rf.Type {
	case "", FormatText:
		return nil, nil
	case FormatJSONObject:
		return sampler.JSONObjectSchema, nil
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

// ToolSchemaError is a tool whose parameters schema cannot be enforced
// on a forced call; it wraps the *sampler.SchemaError.
type ToolSchemaError struct {
	Name string // the tool's function name
	Err  error
}

func (e *ToolSchemaError) Error() string {
	return fmt.Sprintf("engine: tool %q: parameters: %v", e.Name, e.Err)
}

func (e *ToolSchemaError) Unwrap() []error { return []error{ErrToolChoice, e.Err} }
