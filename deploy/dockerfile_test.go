package deploy

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// stage is one FROM of a Dockerfile: its name and its RUN commands, each
// with its continuation lines joined.
type stage struct {
	from, name string
	runs       []string
}

// parseDockerfile reads the stages of a Dockerfile (FROM, RUN; the other
// instructions are not needed here).
func parseDockerfile(path string) ([]stage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			st := stage{from: fields[1]}
			if len(fields) == 4 && strings.EqualFold(fields[2], "AS") {
				st.name = fields[3]
			}
			stages = append(stages, st)
		case "RUN":
			if len(stages) > 0 {
				stages[len(stages)-1].runs = append(stages[len(stages)-1].runs, strings.TrimSpace(line[len(fields[0]):]))
			}
		}
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			continue
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return stages, sc.Err()
}

// goBuild is the one go build command of a stage's RUN lines.
func goBuild(t *testing.T, st stage) string {
	t.Helper()
	var found []string
	for _, r := range st.runs {
		if strings.Contains(r, "go build") {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("stage %s: %d RUN lines with go build, want 1: %q", st.name, len(found), found)
	}
	return found[0]
}

var outFlag = regexp.MustCompile(`-o /out/vkllm\b`)

var (
	builtMu sync.Mutex
	built   = map[string]string{}
)

// buildStage runs the go build line of the Dockerfile's stage name from
// the repository root (the image's WORKDIR /src, a copy of it), writing
// the binary into a temporary folder instead of /out, and returns its
// path. Builds are shared by the tests of one run.
func buildStage(t *testing.T, name string) string {
	t.Helper()
	builtMu.Lock()
	defer builtMu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	stages, err := parseDockerfile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var st *stage
	for i := range stages {
		if stages[i].name == name {
			st = &stages[i]
		}
	}
	if st == nil {
		t.Fatalf("the Dockerfile has no stage %q", name)
	}
	line := goBuild(t, *st)
	if !outFlag.MatchString(line) {
		t.Fatalf("stage %s: %q does not write -o /out/vkllm", name, line)
	}
	dir, err := os.MkdirTemp("", "vkllm-docker-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "vkllm")
	cmd := exec.Command("sh", "-c", outFlag.ReplaceAllString(line, "-o "+bin))
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("stage %s: %s: %v\n%s", name, cmd.Args[2], err, out)
	}
	built[name] = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, p := range built {
		os.RemoveAll(filepath.Dir(p))
	}
	os.Exit(code)
}

// TestDockerfileStages: the stages the images are built from exist, the
// runtime stages run as a non-root user on the intended bases, and their
// go build lines build the vkllm command: static for the distroless CPU
// image, with cgo (libc only, the Vulkan loader dlopened) for the Vulkan
// image.
func TestDockerfileStages(t *testing.T) {
	stages, err := parseDockerfile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]stage{}
	for _, s := range stages {
		byName[s.name] = s
	}
	if last := stages[len(stages)-1]; last.name != "cpu" || !strings.HasPrefix(last.from, "gcr.io/distroless/static") {
		t.Errorf("the default (last) stage is %s FROM %s, want cpu FROM distroless/static", last.name, last.from)
	}
	if v := byName["vulkan"]; !strings.HasPrefix(v.from, "debian:") || !strings.Contains(strings.Join(v.runs, " "), "libvulkan1") {
		t.Errorf("the vulkan stage is FROM %q with %q, want debian with libvulkan1", v.from, v.runs)
	}
	text, _ := os.ReadFile("../Dockerfile")
	if n := strings.Count(string(text), "\nUSER 65532:65532"); n != 2 {
		t.Errorf("%d USER 65532:65532 lines, want one per runtime stage", n)
	}
	for _, c := range []struct {
		stage string
		cgo   bool
	}{{"build", false}, {"build-vulkan", true}} {
		t.Run(c.stage, func(t *testing.T) {
			if testing.Short() {
				t.Skip("builds the command")
			}
			bin := buildStage(t, c.stage)
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var interp bool
			for _, p := range f.Progs {
				interp = interp || p.Type == elf.PT_INTERP
			}
			libs, _ := f.ImportedLibraries()
			if !c.cgo && (interp || len(libs) > 0) {
				t.Errorf("not static: interpreter %v, libraries %v", interp, libs)
			}
			if c.cgo {
				if !interp {
					t.Error("no dynamic loader: cgo is off")
				}
				for _, l := range libs {
					if strings.Contains(l, "vulkan") {
						t.Errorf("links %s: the loader must be dlopened, so the binary starts without it", l)
					}
				}
			}
			info, err := exec.Command("go", "version", "-m", bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			want := "CGO_ENABLED=0"
			if c.cgo {
				want = "CGO_ENABLED=1"
			}
			if !strings.Contains(string(info), "path\tgithub.com/vkllm/vkllm/cmd/vkllm") || !strings.Contains(string(info), want) || !strings.Contains(string(info), "-trimpath=true") {
				t.Errorf("build info lacks the command, %s or -trimpath:\n%s", want, info)
			}
			out, err := exec.Command(bin, "serve", "-h").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "-drain") {
				t.Errorf("vkllm serve -h: %v\n%s", err, out)
			}
			// The Vulkan backend names its loader only when built in (the
			// !cgo stub answers ErrNeedsCgo).
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), "libvulkan.so.1"); has != c.cgo {
				t.Errorf("Vulkan backend built in: %v, want %v", has, c.cgo)
			}
		})
	}
}
