package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	starlarkjson "go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/tidbcloud/ops-server/e2e/deploy/render"
)

// tiltFileOptions are the dialect Tilt accepts (top-level control flow,
// global reassignment, while, set).
var tiltFileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}

// tilt records what a Tiltfile asked for, through stubs of Tilt's builtins.
type tilt struct {
	t          *testing.T
	flags      map[string]bool              // what config.parse() returns (tilt up -- --local)
	localRes   map[string]map[string]string // name -> cmd, serve_cmd, deps, ignore, resource_deps (comma-joined)
	images     map[string]map[string]any    // docker_build ref -> kwargs
	resources  map[string][]string          // k8s_resource workload -> port_forwards
	yamlFiles  []string
	objects    []map[string]any
	allowedCtx []string
}

// TestTiltfile parses the Tiltfile with the Go implementation of Starlark
// and executes it against stubs of the Tilt builtins it uses (helm renders
// the chart with the Helm SDK): it cannot run Tilt here, but it checks the
// syntax, that every name resolves, that the paths it reads exist, and that
// the images it builds, the workloads it configures and the port it
// forwards are those of the chart rendered with the dev values.
func TestTiltfile(t *testing.T) {
	g := NewWithT(t)
	rec := execTiltfile(t, nil)
	testKindMode(t, g, rec)
}

// execTiltfile parses the Tiltfile with the Go implementation of Starlark
// and executes it against recorders of the Tilt builtins, with flags as
// the command line's (tilt up -- --local: {"local": true}).
func execTiltfile(t *testing.T, flags map[string]bool) *tilt {
	t.Helper()
	g := NewWithT(t)
	path := filepath.Join(root, "Tiltfile")
	src, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = tiltFileOptions.Parse(path, src, syntax.RetainComments)
	g.Expect(err).NotTo(HaveOccurred(), "Tiltfile syntax")

	rec := &tilt{t: t, flags: flags, localRes: map[string]map[string]string{}, images: map[string]map[string]any{}, resources: map[string][]string{}}
	thread := &starlark.Thread{
		Name: "tiltfile",
		Load: func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
			if module != "ext://restart_process" {
				return nil, fmt.Errorf("unexpected load of %s", module)
			}
			return starlark.StringDict{"docker_build_with_restart": starlark.NewBuiltin("docker_build_with_restart", rec.dockerBuild)}, nil
		},
	}
	_, err = starlark.ExecFileOptions(tiltFileOptions, thread, path, src, rec.builtins())
	g.Expect(err).NotTo(HaveOccurred(), "executing the Tiltfile against stubs")
	return rec
}

// testKindMode checks the default mode (kind).
func testKindMode(t *testing.T, g Gomega, rec *tilt) {
	g.Expect(rec.allowedCtx).To(Equal([]string{"kind-ops-server"}))

	// Host builds: the binaries, and the buttons.
	g.Expect(rec.localRes).To(HaveKey("binaries"))
	g.Expect(rec.localRes["binaries"]["cmd"]).To(ContainSubstring("./apiserver/cmd/ops-apiserver"))
	g.Expect(rec.localRes["binaries"]["cmd"]).To(ContainSubstring("./operator/cmd/ops-operator"))
	for _, dep := range strings.Split(rec.localRes["binaries"]["deps"], ",") {
		_, err := os.Stat(filepath.Join(root, dep))
		g.Expect(err).NotTo(HaveOccurred(), "local_resource dep %s", dep)
	}
	// Every baked chart (deploy/charts but ops-server, as the Dockerfile's
	// /etc/charts) is copied into the dev images.
	charts, err := os.ReadDir(filepath.Join(root, "deploy", "charts"))
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range charts {
		if !c.IsDir() || c.Name() == "ops-server" {
			continue
		}
		g.Expect(rec.localRes["binaries"]["cmd"]).To(ContainSubstring("cp -R deploy/charts/"+c.Name()+" "), "the Tiltfile copies chart %s", c.Name())
	}
	g.Expect(rec.localRes).To(HaveKey("generate-manifests"))
	g.Expect(rec.localRes["generate-manifests"]["cmd"]).To(Equal("make generate manifests"))
	g.Expect(rec.localRes["generate-manifests"]["auto_init"]).To(Equal("False"))
	g.Expect(rec.localRes["test"]["cmd"]).To(Equal("make test"))
	g.Expect(rec.localRes["test"]["auto_init"]).To(Equal("False"))

	// Every k8s_yaml file exists.
	for _, f := range rec.yamlFiles {
		_, err := os.Stat(filepath.Join(root, f))
		g.Expect(err).NotTo(HaveOccurred(), "k8s_yaml %s", f)
	}

	// The images built are the images of the chart's containers (dev
	// values), live-updated where the container runs them, and only those
	// containers lose the read-only root filesystem.
	deployments := map[string]map[string]any{}
	containerImages := map[string]string{}
	for _, o := range rec.objects {
		if o["kind"] != "Deployment" {
			continue
		}
		name := o["metadata"].(map[string]any)["name"].(string)
		deployments[name] = o
		spec := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range spec["containers"].([]any) {
			c := c.(map[string]any)
			image := strings.SplitN(c["image"].(string), ":", 2)[0]
			containerImages[c["name"].(string)] = image
			ro := c["securityContext"].(map[string]any)["readOnlyRootFilesystem"]
			if _, built := rec.images[image]; built {
				g.Expect(ro).To(BeFalse(), c["name"])
			} else {
				g.Expect(ro).To(BeTrue(), c["name"])
			}
		}
	}
	g.Expect(sortedKeys(rec.images)).To(Equal([]string{"ops-apiserver", "ops-operator"}))
	g.Expect(containerImages).To(HaveKeyWithValue("ops-apiserver", "ops-apiserver"))
	g.Expect(containerImages).To(HaveKeyWithValue("ops-operator", "ops-operator"))
	for ref, kw := range rec.images {
		g.Expect(kw["entrypoint"]).To(Equal([]any{"/app/" + ref}))
		g.Expect(fmt.Sprint(kw["dockerfile_contents"])).To(ContainSubstring("COPY " + ref + " /app/" + ref))
	}

	// The workloads configured exist, and the API port forward targets the
	// API container's port.
	g.Expect(sortedKeys(rec.resources)).To(Equal([]string{"ops-server", "ops-server-operator"}))
	for name := range rec.resources {
		g.Expect(deployments).To(HaveKey(name))
	}
	g.Expect(rec.resources["ops-server"]).To(Equal([]string{"8080:8080"}))
	apiPort := 0.0
	spec := deployments["ops-server"]["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		if c["name"] == "ops-apiserver" {
			apiPort = c["ports"].([]any)[0].(map[string]any)["containerPort"].(float64)
		}
	}
	g.Expect(apiPort).To(Equal(8080.0))
}

// builtins are the stubs of the Tilt builtins the Tiltfile may use.
func (r *tilt) builtins() starlark.StringDict {
	noop := func(name string) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.None, nil
		})
	}
	return starlark.StringDict{
		"version_settings":    noop("version_settings"),
		"TRIGGER_MODE_MANUAL": starlark.MakeInt(1),
		"TRIGGER_MODE_AUTO":   starlark.MakeInt(0),
		"allow_k8s_contexts":  starlark.NewBuiltin("allow_k8s_contexts", r.allowContexts),
		"read_json":           starlark.NewBuiltin("read_json", r.readJSON),
		"local_resource":      starlark.NewBuiltin("local_resource", r.localResource),
		"docker_build":        starlark.NewBuiltin("docker_build", r.dockerBuild),
		"sync": starlark.NewBuiltin("sync", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return starlark.Tuple(args), nil
		}),
		"k8s_yaml": starlark.NewBuiltin("k8s_yaml", r.k8sYAML),
		"blob": starlark.NewBuiltin("blob", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return blob(args[0].(starlark.String)), nil
		}),
		"helm":               starlark.NewBuiltin("helm", r.helm),
		"decode_yaml_stream": starlark.NewBuiltin("decode_yaml_stream", r.decodeYAMLStream),
		"encode_yaml_stream": starlark.NewBuiltin("encode_yaml_stream", r.encodeYAMLStream),
		"k8s_resource":       starlark.NewBuiltin("k8s_resource", r.k8sResource),
		"config": &starlarkstruct.Module{Name: "config", Members: starlark.StringDict{
			"define_bool": starlark.NewBuiltin("config.define_bool", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
				if len(args) != 1 {
					return nil, fmt.Errorf("config.define_bool wants the flag's name")
				}
				return starlark.None, nil
			}),
			"parse": starlark.NewBuiltin("config.parse", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
				d := starlark.NewDict(len(r.flags))
				for k, v := range r.flags {
					_ = d.SetKey(starlark.String(k), starlark.Bool(v))
				}
				return d, nil
			}),
		}},
		"probe":           starlark.NewBuiltin("probe", kwargsStruct),
		"http_get_action": starlark.NewBuiltin("http_get_action", kwargsStruct),
		"fail": starlark.NewBuiltin("fail", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
			return nil, fmt.Errorf("fail: %v", args)
		}),
	}
}

// kwargsStruct records a builtin's keyword arguments as a struct.
func kwargsStruct(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%s takes keyword arguments only", b.Name())
	}
	return starlarkstruct.FromKeywords(starlark.String(b.Name()), kwargs), nil
}

// blob is Tilt's Blob: YAML text.
type blob string

func (b blob) String() string        { return string(b) }
func (b blob) Type() string          { return "blob" }
func (b blob) Freeze()               {}
func (b blob) Truth() starlark.Bool  { return len(b) > 0 }
func (b blob) Hash() (uint32, error) { return starlark.String(b).Hash() }

func kwargMap(kwargs []starlark.Tuple) map[string]starlark.Value {
	out := map[string]starlark.Value{}
	for _, kv := range kwargs {
		out[string(kv[0].(starlark.String))] = kv[1]
	}
	return out
}

func (r *tilt) allowContexts(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	r.allowedCtx = append(r.allowedCtx, string(args[0].(starlark.String)))
	return starlark.None, nil
}

func (r *tilt) readJSON(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	// No tilt-settings.json in a clean checkout: the default.
	if d, ok := kwargMap(kwargs)["default"]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("read_json(%v) without default", args)
}

func (r *tilt) localResource(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	kw := kwargMap(kwargs)
	rec := map[string]string{}
	for _, k := range []string{"cmd", "serve_cmd"} {
		if v, ok := kw[k].(starlark.String); ok {
			rec[k] = string(v)
		}
	}
	for _, k := range []string{"deps", "ignore", "resource_deps"} {
		if list, ok := kw[k].(*starlark.List); ok {
			var ds []string
			for i := 0; i < list.Len(); i++ {
				ds = append(ds, string(list.Index(i).(starlark.String)))
			}
			rec[k] = strings.Join(ds, ",")
		}
	}
	if p, ok := kw["readiness_probe"].(*starlarkstruct.Struct); ok {
		if hg, err := p.Attr("http_get"); err == nil {
			rec["readiness_probe"] = hg.String()
		}
	}
	if ai, ok := kw["auto_init"]; ok {
		rec["auto_init"] = ai.String()
	}
	r.localRes[string(args[0].(starlark.String))] = rec
	return starlark.None, nil
}

func (r *tilt) dockerBuild(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	kw := map[string]any{}
	for k, v := range kwargMap(kwargs) {
		kw[k] = toGo(r.t, v)
	}
	r.images[string(args[0].(starlark.String))] = kw
	return starlark.None, nil
}

func (r *tilt) k8sYAML(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	switch v := args[0].(type) {
	case starlark.String:
		r.yamlFiles = append(r.yamlFiles, string(v))
	case blob:
		objs, err := render.Decode([]byte(v))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			r.objects = append(r.objects, o.Object)
		}
	default:
		return nil, fmt.Errorf("k8s_yaml(%s)", v.Type())
	}
	return starlark.None, nil
}

// helm renders the chart as Tilt's helm() does (helm template, CRDs
// included).
func (r *tilt) helm(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	kw := kwargMap(kwargs)
	var files []string
	if vs, ok := kw["values"].(*starlark.List); ok {
		for i := 0; i < vs.Len(); i++ {
			files = append(files, filepath.Join(root, string(vs.Index(i).(starlark.String))))
		}
	}
	res, err := render.Render(render.Options{
		ChartDir:    filepath.Join(root, string(args[0].(starlark.String))),
		ReleaseName: string(kw["name"].(starlark.String)),
		Namespace:   string(kw["namespace"].(starlark.String)),
		ValuesFiles: files,
	})
	if err != nil {
		return nil, err
	}
	return blob(res.CRDManifest + "---\n" + res.Manifest), nil
}

func (r *tilt) decodeYAMLStream(th *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	objs, err := render.Decode([]byte(args[0].(blob)))
	if err != nil {
		return nil, err
	}
	list := make([]any, 0, len(objs))
	for _, o := range objs {
		list = append(list, o.Object)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	decode := starlarkjson.Module.Members["decode"]
	return starlark.Call(th, decode, starlark.Tuple{starlark.String(b)}, nil)
}

func (r *tilt) encodeYAMLStream(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	list, ok := toGo(r.t, args[0]).([]any)
	if !ok {
		return nil, fmt.Errorf("encode_yaml_stream wants a list")
	}
	var b strings.Builder
	for _, o := range list {
		j, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(j)
		b.WriteString("\n")
	}
	return blob(b.String()), nil
}

func (r *tilt) k8sResource(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var forwards []string
	if pf, ok := kwargMap(kwargs)["port_forwards"].(*starlark.List); ok {
		for i := 0; i < pf.Len(); i++ {
			forwards = append(forwards, string(pf.Index(i).(starlark.String)))
		}
	}
	r.resources[string(args[0].(starlark.String))] = forwards
	return starlark.None, nil
}

// toGo converts a Starlark value to Go through JSON.
func toGo(t *testing.T, v starlark.Value) any {
	t.Helper()
	if _, ok := v.(blob); ok {
		return v.String()
	}
	out, err := starlark.Call(&starlark.Thread{}, starlarkjson.Module.Members["encode"], starlark.Tuple{v}, nil)
	if err != nil {
		// Not JSON-encodable (a function, a sync step): its string form.
		return v.String()
	}
	var x any
	if err := json.Unmarshal([]byte(out.(starlark.String)), &x); err != nil {
		t.Fatal(err)
	}
	return x
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
