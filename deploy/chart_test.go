package deploy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/vkllm"

// crdVersion is the release of the Gateway API Inference Extension whose
// CRDs are vendored in crds/.
const crdVersion = "v1.5.0"

// doc is one rendered manifest: its template and its YAML.
type doc struct {
	source string
	kind   string
	yaml   []byte
}

// render renders the chart as `helm template` does (client only, for a
// Kubernetes 1.33 cluster) with the chart's values overridden by the
// values files and then by set, and splits the manifests.
func render(t *testing.T, set map[string]any, files ...string) []doc {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	vals = chartutil.CoalesceTables(set, vals)
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = "vkllm", "default"
	kv, err := chartutil.ParseKubeVersion("v1.33.0")
	if err != nil {
		t.Fatal(err)
	}
	inst.KubeVersion = kv
	rel, err := inst.RunWithContext(context.Background(), ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var docs []doc
	for _, part := range strings.Split(rel.Manifest, "\n---\n") {
		part = strings.TrimSpace(strings.TrimPrefix(part, "---"))
		if part == "" {
			continue
		}
		src, _, _ := strings.Cut(part, "\n")
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(part), &tm); err != nil {
			t.Fatalf("%s: %v\n%s", src, err, part)
		}
		docs = append(docs, doc{source: strings.TrimPrefix(src, "# Source: "), kind: tm.Kind, yaml: []byte(part)})
	}
	return docs
}

// serviceMonitor is the part of the Prometheus Operator's ServiceMonitor
// (monitoring.coreos.com/v1) that the chart writes; its module is not
// needed for that much.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port     string `json:"port"`
			Path     string `json:"path"`
			Interval string `json:"interval"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// rendered is a chart's manifests decoded.
type rendered struct {
	deploy  *appsv1.Deployment
	service *corev1.Service
	secret  *corev1.Secret
	hpa     *autoscalingv2.HorizontalPodAutoscaler
	monitor *serviceMonitor
	gateway map[string]map[string]any // InferencePool, InferenceObjective
}

// decode decodes every manifest strictly into its API type (a field the
// type does not have fails), and validates the gateway's resources
// against the vendored CRDs.
func decode(t *testing.T, docs []doc) rendered {
	t.Helper()
	r := rendered{gateway: map[string]map[string]any{}}
	for _, d := range docs {
		var err error
		into := func(v any) { err = yaml.UnmarshalStrict(d.yaml, v) }
		switch d.kind {
		case "Deployment":
			r.deploy = &appsv1.Deployment{}
			into(r.deploy)
		case "Service":
			r.service = &corev1.Service{}
			into(r.service)
		case "Secret":
			r.secret = &corev1.Secret{}
			into(r.secret)
		case "HorizontalPodAutoscaler":
			r.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			into(r.hpa)
		case "ServiceMonitor":
			r.monitor = &serviceMonitor{}
			into(r.monitor)
		case "InferencePool", "InferenceObjective":
			var obj map[string]any
			err = unmarshalUnstructured(d.yaml, &obj)
			if err == nil {
				if errs := validateCR(t, d.kind, obj); len(errs) > 0 {
					t.Errorf("%s against the %s CRD (%s): %v", d.source, d.kind, crdVersion, errs.ToAggregate())
				}
			}
			r.gateway[d.kind] = obj
		default:
			t.Errorf("%s: kind %q the test does not know", d.source, d.kind)
			continue
		}
		if err != nil {
			t.Errorf("%s: strict decode of a %s: %v", d.source, d.kind, err)
		}
	}
	if r.deploy == nil || r.service == nil {
		t.Fatal("no Deployment or no Service rendered")
	}
	return r
}

var crdFiles = map[string]string{"InferencePool": "crds/inferencepools.yaml", "InferenceObjective": "crds/inferenceobjectives.yaml"}

// validateCR validates obj as the API server would on create: its
// apiVersion among the CRD's served versions, the version's
// openAPIV3Schema (types, enums, patterns, required fields, bounds), no
// field the schema does not know (the server would prune it: an error
// under strict field validation), and the x-kubernetes-validations CEL
// rules after defaulting.
func validateCR(t *testing.T, kind string, obj map[string]any) field.ErrorList {
	t.Helper()
	b, err := os.ReadFile(crdFiles[kind])
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatalf("%s: %v", crdFiles[kind], err)
	}
	if got := crd.Annotations["inference.networking.k8s.io/bundle-version"]; got != crdVersion {
		t.Fatalf("%s is of %s, want %s", crdFiles[kind], got, crdVersion)
	}
	var v1schema *apiextensionsv1.JSONSchemaProps
	var served []string
	for _, v := range crd.Spec.Versions {
		served = append(served, crd.Spec.Group+"/"+v.Name)
		if obj["apiVersion"] == crd.Spec.Group+"/"+v.Name && v.Served {
			v1schema = v.Schema.OpenAPIV3Schema
		}
	}
	if obj["kind"] != crd.Spec.Names.Kind || v1schema == nil {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), obj["apiVersion"], fmt.Sprintf("not a served version of %s: %v", crd.Spec.Names.Kind, served))}
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	var errs field.ErrorList
	unknown := pruning.PruneWithOptions(deepCopy(obj), structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	for _, p := range unknown {
		if !strings.HasPrefix(p, "metadata.") {
			errs = append(errs, field.Invalid(field.NewPath(p), "", "unknown field"))
		}
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		t.Fatal(err)
	}
	withDefaults := deepCopy(obj)
	defaulting.Default(withDefaults, structural)
	errs = append(errs, validation.ValidateCustomResource(nil, withDefaults, validator)...)
	celErrs, _ := cel.NewValidator(structural, true, celconfig.PerCallLimit).Validate(context.Background(), nil, structural, withDefaults, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// unmarshalUnstructured decodes YAML as the API server decodes a custom
// resource's JSON: whole numbers as int64, a duplicate key an error.
func unmarshalUnstructured(y []byte, obj *map[string]any) error {
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return err
	}
	return utiljson.Unmarshal(j, obj)
}

func deepCopy(obj map[string]any) map[string]any {
	b, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := unmarshalUnstructured(b, &out); err != nil {
		panic(err)
	}
	return out
}

// serveFlags are the flag names `vkllm serve -h` lists, from the binary
// the Dockerfile's CPU stage builds.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(buildStage(t, "build"), "serve", "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("vkllm serve -h: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["drain"] || !flags["addr"] {
		t.Fatalf("no -drain or -addr in vkllm serve -h:\n%s", out)
	}
	return flags
}

// serveArgs are the flags of the vkllm container's args (after "serve"),
// NAME to value ("" for a boolean flag).
func serveArgs(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container %s args %q do not run vkllm serve", c.Name, c.Args)
	}
	args := map[string]string{}
	for _, a := range c.Args[1:] {
		name, val, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !strings.HasPrefix(a, "--") || (!ok && name != "quiet") {
			t.Errorf("container %s: argument %q is not --NAME=VALUE", c.Name, a)
		}
		args[name] = val
	}
	return args
}

// TestChart renders the chart for the default values, the GPU values
// file and the other modes, decodes every manifest strictly, validates the
// gateway's resources against the CRDs, and checks the Deployment against
// the server: its flags exist in `vkllm serve -h`, the probes and ports
// are the server's, the grace period covers the preStop sleep and the
// drain, and the pod runs locked down.
func TestChart(t *testing.T) {
	flags := serveFlags(t)
	for _, c := range []struct {
		name  string
		files []string
		set   map[string]any
		gpu   bool
	}{
		{name: "default"},
		{name: "gpu", files: []string{chartDir + "/values-gpu.yaml"}, gpu: true},
		{name: "api key as env from a made Secret", set: map[string]any{
			"apiKey": map[string]any{"enabled": true, "mode": "env", "value": "k"},
			"model":  map[string]any{"pull": map[string]any{"enabled": false}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := decode(t, render(t, c.set, c.files...))
			d := r.deploy
			pod := d.Spec.Template.Spec
			if len(pod.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(pod.Containers))
			}
			ctr := pod.Containers[0]
			args := serveArgs(t, ctr)
			for name := range args {
				if !flags[name] {
					t.Errorf("--%s is not a flag of vkllm serve", name)
				}
			}

			// Ports: --addr, the container's port, the probes, the Service
			// and the InferencePool agree.
			_, portStr, _ := strings.Cut(args["addr"], ":")
			var port int32
			fmt.Sscan(portStr, &port)
			if len(ctr.Ports) != 1 || ctr.Ports[0].ContainerPort != port || ctr.Ports[0].Name != "http" {
				t.Errorf("container ports %+v, --addr %q", ctr.Ports, args["addr"])
			}
			for _, p := range []struct {
				name  string
				probe *corev1.Probe
				path  string
			}{{"startup", ctr.StartupProbe, "/health"}, {"liveness", ctr.LivenessProbe, "/health"}, {"readiness", ctr.ReadinessProbe, "/ready"}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("no %s probe over HTTP", p.name)
					continue
				}
				if g := p.probe.HTTPGet; g.Path != p.path || g.Port.String() != "http" {
					t.Errorf("%s probe GET %s on port %s, want %s on http", p.name, g.Path, g.Port.String(), p.path)
				}
			}
			if sp := r.service.Spec.Ports; len(sp) != 1 || sp[0].TargetPort.String() != "http" {
				t.Errorf("service ports %+v", sp)
			}
			if !equalLabels(r.service.Spec.Selector, d.Spec.Template.Labels) || !equalLabels(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				t.Errorf("selectors %v, %v do not select the pod's labels %v", r.service.Spec.Selector, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
			}

			// Shutdown: the kubelet sleeps preStop, sends SIGTERM, waits the
			// drain; the grace period must cover both.
			drain, err := time.ParseDuration(args["drain"])
			if err != nil {
				t.Fatalf("--drain=%q: %v", args["drain"], err)
			}
			var sleep time.Duration
			if ctr.Lifecycle == nil || ctr.Lifecycle.PreStop == nil || ctr.Lifecycle.PreStop.Sleep == nil {
				t.Error("no preStop sleep")
			} else {
				sleep = time.Duration(ctr.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			}
			grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
			if grace <= sleep+drain {
				t.Errorf("terminationGracePeriodSeconds %s <= preStop %s + drain %s", grace, sleep, drain)
			}

			// Locked down: non-root, read-only root, no capabilities.
			if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Error("the pod may run as root")
			}
			for _, x := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
				sc := x.SecurityContext
				if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
					sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
					sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
					t.Errorf("container %s security context %+v: want a read-only root, no privilege escalation, capabilities drop ALL", x.Name, sc)
				}
				if !slices.ContainsFunc(x.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
					t.Errorf("container %s has no writable /tmp", x.Name)
				}
			}

			// The model: --model points into the volume the pull fills.
			if !strings.Contains(args["model"], "=/models/") {
				t.Errorf("--model=%s is not under /models", args["model"])
			}
			for _, x := range pod.InitContainers {
				if x.Name == "pull" && (len(x.Args) < 3 || x.Args[0] != "pull" || !slices.Contains(x.Args, "/models")) {
					t.Errorf("init container pull args %q", x.Args)
				}
			}

			// The API key: a file the flag names, or $VKLLM_API_KEY.
			if file, ok := args["api-key-file"]; ok {
				if !slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return strings.HasPrefix(file, m.MountPath+"/") && m.ReadOnly }) {
					t.Errorf("--api-key-file=%s is on no read-only mount", file)
				}
			}
			keyEnv := slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool {
				return e.Name == "VKLLM_API_KEY" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
			})
			if c.set != nil && (!keyEnv || r.secret == nil || r.secret.StringData["api-key"] != "k") {
				t.Errorf("api key as env: VKLLM_API_KEY from a Secret %v, secret %+v", keyEnv, r.secret)
			}

			// The GPU: a GPU in the limits, the node selector, Vulkan.
			gpu := ctr.Resources.Limits["nvidia.com/gpu"]
			if c.gpu != !gpu.IsZero() || c.gpu != (len(pod.NodeSelector) > 0) || c.gpu != (args["backend"] == "vulkan") {
				t.Errorf("gpu %v: limits %v, nodeSelector %v, --backend=%s", c.gpu, ctr.Resources.Limits, pod.NodeSelector, args["backend"])
			}
			if c.gpu && !strings.HasSuffix(ctr.Image, "-vulkan") {
				t.Errorf("GPU image %s is not the Vulkan one", ctr.Image)
			}

			if !c.gpu {
				return
			}
			// The optional resources, all on in the GPU values.
			if r.monitor == nil || len(r.monitor.Spec.Endpoints) != 1 || r.monitor.Spec.Endpoints[0].Port != "http" || r.monitor.Spec.Endpoints[0].Path != "/metrics" {
				t.Errorf("ServiceMonitor %+v", r.monitor)
			}
			if r.hpa == nil || r.hpa.Spec.ScaleTargetRef.Name != d.Name || len(r.hpa.Spec.Metrics) != 1 ||
				r.hpa.Spec.Metrics[0].Pods == nil || !strings.Contains(r.hpa.Spec.Metrics[0].Pods.Metric.Name, "num_requests_waiting") {
				t.Errorf("HPA %+v", r.hpa)
			} else if d.Spec.Replicas != nil {
				t.Error("replicas set beside an HPA")
			}
			pool := r.gateway["InferencePool"]
			if pool == nil || r.gateway["InferenceObjective"] == nil {
				t.Fatal("no InferencePool or InferenceObjective")
			}
			spec := pool["spec"].(map[string]any)
			tp := spec["targetPorts"].([]any)[0].(map[string]any)["number"]
			if fmt.Sprint(tp) != fmt.Sprint(port) {
				t.Errorf("InferencePool targetPorts %v, server port %d", tp, port)
			}
			sel := map[string]string{}
			for k, v := range spec["selector"].(map[string]any)["matchLabels"].(map[string]any) {
				sel[k] = fmt.Sprint(v)
			}
			if !equalLabels(sel, d.Spec.Template.Labels) {
				t.Errorf("InferencePool selector %v, pod labels %v", sel, d.Spec.Template.Labels)
			}
		})
	}
}

// TestChartAllowedHosts: a keyless server answers only its own names
// (DNS rebinding): by default the Service's DNS names, plus the names
// listed in server.allowedHosts (a list, or a comma-separated string), never
// every Host unless "*" is asked for; with an API key no list is given.
func TestChartAllowedHosts(t *testing.T) {
	for _, c := range []struct {
		name string
		set  map[string]any
		want []string // --allowed-hosts, nil: no flag
	}{
		{"default", nil, []string{"vkllm", "vkllm.default", "vkllm.default.svc", "vkllm.default.svc.cluster.local"}},
		{"a gateway's names", map[string]any{"server": map[string]any{"allowedHosts": []any{"api.example.com", ".models.example.com"}, "clusterDomain": "k8s.internal"}},
			[]string{"vkllm", "vkllm.default", "vkllm.default.svc", "vkllm.default.svc.k8s.internal", "api.example.com", ".models.example.com"}},
		{"a string", map[string]any{"server": map[string]any{"allowedHosts": "a.example.com,b.example.com"}},
			[]string{"vkllm", "vkllm.default", "vkllm.default.svc", "vkllm.default.svc.cluster.local", "a.example.com", "b.example.com"}},
		{"with a key", map[string]any{"apiKey": map[string]any{"enabled": true, "value": "k"}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := decode(t, render(t, c.set))
			args := serveArgs(t, r.deploy.Spec.Template.Spec.Containers[0])
			got, ok := args["allowed-hosts"]
			switch {
			case c.want == nil && ok:
				t.Errorf("--allowed-hosts=%s with an API key", got)
			case c.want != nil && !slices.Equal(strings.Split(got, ","), c.want):
				t.Errorf("--allowed-hosts=%s, want %s", got, strings.Join(c.want, ","))
			}
			if c.want != nil && c.want[0] != r.service.Name {
				t.Errorf("the Service is %s", r.service.Name)
			}
		})
	}
}

// equalLabels reports whether every label of sel is on the pod.
func equalLabels(sel, pod map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if pod[k] != v {
			return false
		}
	}
	return true
}

// TestCRDValidation: the validation catches what the API server would
// refuse, so a chart that passes is not passing because nothing is
// checked.
func TestCRDValidation(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{
			"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
			"metadata": map[string]any{"name": "p"},
			"spec": map[string]any{
				"selector":          map[string]any{"matchLabels": map[string]any{"app": "vkllm"}},
				"targetPorts":       []any{map[string]any{"number": int64(8080)}},
				"endpointPickerRef": map[string]any{"name": "epp", "port": map[string]any{"number": int64(9002)}},
			},
		}
	}
	if errs := validateCR(t, "InferencePool", good()); len(errs) > 0 {
		t.Fatalf("a valid pool: %v", errs.ToAggregate())
	}
	for _, c := range []struct {
		name string
		edit func(spec map[string]any)
	}{
		{"port out of range", func(s map[string]any) { s["targetPorts"] = []any{map[string]any{"number": int64(70000)}} }},
		{"duplicate ports (CEL)", func(s map[string]any) {
			s["targetPorts"] = []any{map[string]any{"number": int64(1)}, map[string]any{"number": int64(1)}}
		}},
		{"no endpoint picker", func(s map[string]any) { delete(s, "endpointPickerRef") }},
		{"picker Service without port (CEL after defaulting)", func(s map[string]any) { delete(s["endpointPickerRef"].(map[string]any), "port") }},
		{"unknown field", func(s map[string]any) { s["replicas"] = int64(2) }},
		{"bad failure mode", func(s map[string]any) { s["endpointPickerRef"].(map[string]any)["failureMode"] = "Sometimes" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := good()
			c.edit(obj["spec"].(map[string]any))
			if errs := validateCR(t, "InferencePool", obj); len(errs) == 0 {
				t.Error("accepted")
			}
		})
	}
	bad := good()
	bad["apiVersion"] = "inference.networking.x-k8s.io/v1alpha2"
	if errs := validateCR(t, "InferencePool", bad); len(errs) == 0 {
		t.Error("an InferencePool of the old API group accepted")
	}
}
