// Package gpu holds the GPU check's scripts (check.sh, prepare.sh,
// summarize.py); this test checks that their inputs build, without a GPU
// and without running them: the scripts parse, check.sh runs only the
// binaries prepare.sh and tools/build-llama-vulkan.sh make, its test
// filters name tests that exist, and its synthetic models build.
package gpu

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// arrays returns the words of every bash array assignment NAME=(...) in
// src, all the assignments of that name together.
func arrays(src, name string) []string {
	var words []string
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `=\(([^)]*)\)`)
	for _, m := range re.FindAllStringSubmatch(src, -1) {
		words = append(words, strings.Fields(m[1])...)
	}
	return words
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

func TestScriptsParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("no bash:", err)
	}
	for _, s := range []string{"check.sh", "prepare.sh", "../build-llama-vulkan.sh", "../build-llama-cpu-portable.sh", "../lib/llama-sdist.sh"} {
		if out, err := exec.Command(bash, "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
	}
}

// TestBinaries: every "$bin/NAME" check.sh runs is a Go binary prepare.sh
// builds (the same go_bins list, each with a package that has tests where
// NAME is NAME.test) or a program tools/build-llama-vulkan.sh builds.
func TestBinaries(t *testing.T) {
	check, prepare, build := read(t, "check.sh"), read(t, "prepare.sh"), read(t, "../build-llama-vulkan.sh")
	goBins, prepBins := sorted(arrays(check, "go_bins")), sorted(arrays(prepare, "go_bins"))
	if len(goBins) == 0 || !slices.Equal(goBins, prepBins) {
		t.Fatalf("check.sh's go_bins %q, prepare.sh's %q", goBins, prepBins)
	}
	pkgs := map[string]string{}
	for _, m := range regexp.MustCompile(`\[([\w.]+)\]=(\./[\w/]+)`).FindAllStringSubmatch(prepare, -1) {
		pkgs[m[1]] = m[2]
	}
	for _, b := range goBins {
		dir, ok := pkgs[b]
		if !ok {
			t.Errorf("prepare.sh names no package for %s", b)
			continue
		}
		tests, _ := filepath.Glob(filepath.Join("../..", dir, "*_test.go"))
		if strings.HasSuffix(b, ".test") && len(tests) == 0 {
			t.Errorf("%s: %s has no tests", b, dir)
		}
		if _, err := os.Stat(filepath.Join("../..", dir)); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	peerBins := arrays(check, "peer_bins")
	targets := regexp.MustCompile(`--target ([\w -]+?) -j`).FindStringSubmatch(build)
	if len(peerBins) == 0 || targets == nil || !slices.Equal(sorted(peerBins), sorted(strings.Fields(targets[1]))) {
		t.Fatalf("check.sh's peer_bins %q, build-llama-vulkan.sh's targets %q", peerBins, targets)
	}
	used := regexp.MustCompile(`\$bin/([\w.-]+)`).FindAllStringSubmatch(check, -1)
	if len(used) == 0 {
		t.Fatal("check.sh runs no $bin/ program")
	}
	for _, m := range used {
		if name := m[1]; !slices.Contains(goBins, name) && !slices.Contains(peerBins, name) {
			t.Errorf("check.sh runs $bin/%s, which neither prepare.sh nor build-llama-vulkan.sh makes", name)
		}
	}
}

// testNames lists the Test functions of the package in dir.
func testNames(t *testing.T, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var names []string
	for _, f := range files {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				names = append(names, fd.Name.Name)
			}
		}
	}
	return names
}

// TestTestFilters: each -test.run filter in check.sh, applied to the
// package its test binary comes from, selects the tests it must: the
// models filter the Vulkan parity, batch, placement and OOM tests.
func TestTestFilters(t *testing.T) {
	check := read(t, "check.sh")
	runs := regexp.MustCompile(`cd (\S+) && timeout (?:-k \S+ )?\S+ "\$bin/([\w.]+)"[^\n]*`).FindAllStringSubmatch(check, -1)
	if len(runs) != 2 {
		t.Fatalf("check.sh runs %d test binaries, want 2 (kernels/vulkan, models)", len(runs))
	}
	want := map[string][]string{
		"kernels/vulkan": {"TestKernels", "TestDTypes", "TestOOM", "TestMatMulVariants"},
		"models":         {"TestVulkanParity", "TestVulkanBatch", "TestVulkanPlacement", "TestVulkanOOM"},
	}
	for _, m := range runs {
		dir, filter := m[1], "."
		if f := regexp.MustCompile(`-test\.run '([^']+)'`).FindStringSubmatch(m[0]); f != nil {
			filter = f[1]
		}
		t.Logf("%s: -test.run %q", dir, filter)
		re, err := regexp.Compile(filter)
		if err != nil {
			t.Fatalf("%s: -test.run %q: %v", dir, filter, err)
		}
		names := testNames(t, filepath.Join("../..", dir))
		for _, w := range want[dir] {
			if !slices.Contains(names, w) {
				t.Errorf("%s has no %s", dir, w)
			} else if !re.MatchString(w) {
				t.Errorf("%s: -test.run %q leaves out %s", dir, filter, w)
			}
		}
	}
}

// TestSpecs: every synthetic model check.sh benches (both modes) parses,
// plans at full scale, and builds at the tiny scale.
func TestSpecs(t *testing.T) {
	check := read(t, "check.sh")
	specs := append(append(arrays(check, "specs"), arrays(check, "ops_specs")...), arrays(check, "cpu_specs")...)
	if len(specs) < 10 {
		t.Fatalf("check.sh lists %d specs: %q", len(specs), specs)
	}
	// The serve step runs the GGUF the bench wrote for serve_spec.
	serve := regexp.MustCompile(`(?m)^\s*serve_spec=(\S+)`).FindAllStringSubmatch(check, -1)
	if len(serve) != 2 {
		t.Fatalf("check.sh sets serve_spec %d times, want 2 (both modes)", len(serve))
	}
	for _, m := range serve {
		if !slices.Contains(arrays(check, "specs"), m[1]) {
			t.Errorf("serve_spec %s is not among the specs whose GGUF is written", m[1])
		}
	}
	for _, spec := range sorted(specs) {
		s, dt, err := synth.ParseSpec(spec)
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		if _, err := synth.Plan(s, dt); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
		m, err := synth.Build(s.Tiny(), dt, 1, 0)
		if err == nil {
			_, err = m.Parse()
		}
		if err != nil {
			t.Errorf("%s at the tiny scale: %v", spec, err)
		}
	}
}

// TestSweepStep: check.sh's sweep step passes only flags `vkllm bench`
// defines, in both modes, and hands its tuning on to the later steps.
func TestSweepStep(t *testing.T) {
	check, bench := read(t, "check.sh"), read(t, "../../cmd/internal/benchcmd/main.go")
	m := regexp.MustCompile(`"\$bin/vkllm" bench --sweep ([^\n]*)`).FindStringSubmatch(check)
	if m == nil {
		t.Fatal("check.sh runs no vkllm bench --sweep")
	}
	flags := append(strings.Fields(m[1]), arrays(check, "sweep_flags")...)
	if len(arrays(check, "sweep_flags")) < 4 {
		t.Errorf("sweep_flags %q: want a value in both modes", arrays(check, "sweep_flags"))
	}
	for _, f := range append(flags, "--sweep") {
		name, ok := strings.CutPrefix(f, "--")
		if !ok {
			continue
		}
		if !regexp.MustCompile(`fs\.\w+\("` + regexp.QuoteMeta(name) + `"`).MatchString(bench) {
			t.Errorf("check.sh passes %s, which vkllm bench does not define", f)
		}
	}
	if !strings.Contains(check, "export VKLLM_VULKAN_TUNING=") || !strings.Contains(read(t, "../../kernels/vulkan/backend.go"), `"VKLLM_VULKAN_TUNING"`) {
		t.Error("the sweep's tuning is not passed on through VKLLM_VULKAN_TUNING")
	}
}

// TestSummarizeSweep: summarize.py puts a sweep's default and chosen
// candidates into results.json and results.md.
func TestSummarizeSweep(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	work, out := t.TempDir(), t.TempDir()
	sweep := `{"shapes": [], "time_ns": 61000000000, "tuning": {"vendor": 4318, "device": "Card", "kernels": {"matvec/q4_0": {"wg": 256}}},
	 "rows": [{"key": "matvec/q4_0", "knobs": {"wg": 128, "rows": 2, "toks": 1, "bpi": 2}, "score_ns": 9000, "weight_gbs": 500},
	          {"key": "matvec/q4_0", "knobs": {"wg": 256, "rows": 2, "toks": 1, "bpi": 2}, "score_ns": 3000, "weight_gbs": 1500, "chosen": true},
	          {"key": "matvec/q4_0", "knobs": {"wg": 64, "rows": 2, "toks": 1, "bpi": 2}, "score_ns": 1000, "weight_gbs": 4500, "wrong": "element 3"}]}`
	if err := os.WriteFile(filepath.Join(work, "sweep.json"), []byte(sweep), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "summarize.py", "--work", work, "--out", out, "--pp", "512", "--tg", "128")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("summarize.py: %v\n%s", err, b)
	}
	var res struct {
		Sweep struct {
			Seconds float64
			Kernels map[string]struct {
				Candidates, Wrong int
				Default, Chosen   struct {
					Knobs      map[string]int
					UsPerToken float64 `json:"us_per_token"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(read(t, filepath.Join(out, "results.json"))), &res); err != nil {
		t.Fatal(err)
	}
	k := res.Sweep.Kernels["matvec/q4_0"]
	if res.Sweep.Seconds != 61 || k.Candidates != 3 || k.Wrong != 1 || k.Default.UsPerToken != 9 || k.Chosen.Knobs["wg"] != 256 || k.Chosen.UsPerToken != 3 {
		t.Errorf("results.json sweep %+v", res.Sweep)
	}
	if md := read(t, filepath.Join(out, "results.md")); !strings.Contains(md, "| matvec/q4_0 | 3 | 1 | 9.00 µs (500.0 GB/s) | 3.00 µs (1500.0 GB/s) | bpi=2 rows=2 toks=1 wg=256 |") {
		t.Errorf("results.md:\n%s", md)
	}
}
