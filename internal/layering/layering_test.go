package layering

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/vkllm/vkllm/"

// layer is a package's place in the house and the packages of the module
// it may import, each of a lower layer. The concrete backends (cpu,
// cpuref, vulkan) are imported only by programs (cmd/...) and tests, as
// database/sql drivers.
type layer struct {
	n     int
	allow []string
}

var layers = map[string]layer{
	"errcode":                  {0, nil},
	"internal/mmap":            {0, nil},
	"kv":                       {0, nil},
	"sampler":                  {0, nil},
	"kernels/vulkan/shaders":   {0, nil},
	"tools/gpu":                {0, nil},
	"hub":                      {0, nil},
	"internal/hubtest":         {0, nil},
	"tensor":                   {1, []string{"errcode"}},
	"sampler/grammar":          {1, []string{"sampler"}},
	"tensor/gguf":              {2, []string{"errcode", "internal/mmap", "tensor"}},
	"tensor/safetensors":       {2, []string{"errcode", "internal/mmap", "tensor"}},
	"kernels":                  {2, []string{"errcode", "tensor"}},
	"tokenizer":                {3, []string{"errcode", "tensor/gguf"}},
	"tokenizer/chat":           {3, []string{"errcode", "tensor/gguf"}},
	"internal/synth":           {3, []string{"tensor", "tensor/gguf"}},
	"kernels/internal/cpubase": {3, []string{"errcode", "kernels", "tensor"}},
	"kernels/kerneltest":       {3, []string{"kernels", "tensor"}},
	"kernels/vulkan":           {3, []string{"errcode", "internal/mmap", "kernels", "kernels/vulkan/shaders", "tensor"}},
	"kernels/cpuref":           {4, []string{"kernels", "kernels/internal/cpubase", "tensor"}},
	"kernels/cpu":              {4, []string{"errcode", "internal/mmap", "kernels", "kernels/internal/cpubase", "tensor"}},
	"internal/testmodel":       {4, []string{"internal/synth", "kernels", "tensor", "tensor/gguf"}},
	"models":                   {4, []string{"errcode", "internal/mmap", "kernels", "kv", "tensor", "tensor/gguf", "tensor/safetensors"}},
	"engine": {5, []string{"errcode", "kernels", "kv", "models", "sampler", "sampler/grammar", "tensor",
		"tokenizer", "tokenizer/chat"}},
	"server":               {6, []string{"engine", "errcode", "kernels", "models", "sampler", "tokenizer", "tokenizer/chat"}},
	"cmd/internal/runinfo": {6, []string{"errcode", "kernels", "models", "tensor"}},
	"cmd/internal/benchcmd": {7, []string{"cmd/internal/runinfo", "engine", "errcode", "internal/mmap", "internal/synth",
		"kernels", "kernels/cpu", "kernels/cpuref", "kernels/vulkan", "models", "sampler", "sampler/grammar", "tensor",
		"tensor/gguf", "tokenizer", "tokenizer/chat"}},
	"cmd/vkllm": {8, []string{"cmd/internal/benchcmd", "cmd/internal/runinfo", "engine", "errcode", "hub", "kernels",
		"kernels/cpu", "kernels/cpuref", "kernels/vulkan", "models", "sampler", "server", "tensor", "tensor/gguf",
		"tokenizer", "tokenizer/chat"}},
}

// engineCore are the files of engine's core (Engine: Add, Step, Abort,
// with its scheduler, block manager, runner, drafts and embeddings):
// they know nothing of chat, nor of the facade's grammars, and stay
// small enough to read in one sitting (engineCoreLines).
var engineCore = []string{"blocks.go", "draft.go", "embed.go", "engine.go", "fanout.go", "output.go", "panic.go",
	"request.go", "retain.go", "runner.go", "scheduler.go", "spec.go", "stats.go"}

// engineCoreLines bounds the core's size (issue 38: ~2.5k lines); the
// facade's work (opening a draft model, reading a model's pooling, the
// loop, the planner) lives in the other files.
const engineCoreLines = 2500

// TestTable: every allowed import is of a lower layer, so no import
// points up and none closes a circle.
func TestTable(t *testing.T) {
	for p, l := range layers {
		for _, a := range l.allow {
			la, ok := layers[a]
			if !ok || la.n >= l.n {
				t.Errorf("%s (layer %d) may import %s (layer %d, listed %v)", p, l.n, a, la.n, ok)
			}
		}
	}
}

// TestImports: each package of the module is in the table and imports
// (outside its tests) only what the table allows.
func TestImports(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
			return filepath.SkipDir // another module (tests/browser, deploy)
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if rel == "internal/layering" {
			return nil
		}
		seen++
		l, ok := layers[rel]
		if !ok {
			t.Errorf("package %s is not in the layering table", rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			if dep, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(l.allow, dep) {
				t.Errorf("%s imports %s, which the table does not allow (layer %d)", rel, dep, layers[dep].n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < len(layers)-1 {
		t.Errorf("found %d packages for a table of %d", seen, len(layers))
	}
}

// TestEngineCore: the engine's core files import neither tokenizer/chat
// nor sampler/grammar (the facade's), each core file exists, and together
// they hold at most engineCoreLines lines.
func TestEngineCore(t *testing.T) {
	fset := token.NewFileSet()
	lines := 0
	for _, name := range engineCore {
		src, err := os.ReadFile(filepath.Join("../../engine", name))
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module+"tokenizer/chat" || p == module+"sampler/grammar" {
				t.Errorf("engine/%s (core) imports %s", name, p)
			}
		}
	}
	if lines > engineCoreLines {
		t.Errorf("engine's core is %d lines, over %d: move the facade's work out of %v", lines, engineCoreLines, engineCore)
	}
}

// coreUsesFacade are the facade's names the core may name, and why.
var coreUsesFacade = map[string]string{
	// Request.format: StreamOption is func(*Request), which other
	// Generators (the server's fakes) apply to read a request's N, so
	// the facade's options ride on the core's Request.
	"ResponseFormat": "request.go",
}

// TestEngineCoreUses: the engine's core names nothing the facade
// declares (LLM, Options, the loop, the planner) but coreUsesFacade: a
// core file's package-level names that its own scopes leave unresolved
// are the core's, the standard ones or imports, never a facade file's.
func TestEngineCoreUses(t *testing.T) {
	dir := "../../engine"
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	facade := map[string]string{} // a facade file's package-level name -> the file
	var core []*ast.File
	for _, path := range names {
		name := filepath.Base(path)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(engineCore, name) {
			core = append(core, f)
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					facade[d.Name.Name] = name
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						facade[s.Name.Name] = name
					case *ast.ValueSpec:
						for _, n := range s.Names {
							facade[n.Name] = name
						}
					}
				}
			}
		}
	}
	if len(core) != len(engineCore) || len(facade) == 0 {
		t.Fatalf("%d core files of %d, %d facade names", len(core), len(engineCore), len(facade))
	}
	for _, f := range core {
		for _, id := range f.Unresolved {
			in := filepath.Base(fset.Position(id.Pos()).Filename)
			if file, ok := facade[id.Name]; ok && coreUsesFacade[id.Name] != in {
				t.Errorf("%s (core) uses %s, the facade's (%s)", fset.Position(id.Pos()), id.Name, file)
			}
		}
	}
}

// goFile is a Go file's name in a package doc.
var goFile = regexp.MustCompile(`\b[a-z0-9_]+\.go\b`)

// TestDocFiles: every Go file a package doc names exists in the package
// (file maps drift: two did).
func TestDocFiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for rel := range layers {
		dir := filepath.Join(root, rel)
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			continue // not there: TestImports says so
		}
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc == nil {
				continue
			}
			for _, ref := range goFile.FindAllString(f.Doc.Text(), -1) {
				if _, err := os.Stat(filepath.Join(dir, ref)); err != nil {
					t.Errorf("%s/%s: the package doc names %s, which is not there", rel, name, ref)
				}
			}
		}
	}
}
