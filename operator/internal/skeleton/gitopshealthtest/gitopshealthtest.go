// Package gitopshealthtest evaluates the health checks docs/gitops-health.md
// gives GitOps tools for our custom resources, as those tools would: the
// Argo CD Lua health scripts with gopher-lua (the interpreter Argo CD
// embeds) and the Flux Kustomization healthCheckExprs with cel-go (the CEL
// implementation Flux uses), next to cli-utils' kstatus. The scripts and
// expressions are read from the page itself, so the page and the tests
// cannot drift. Tests only: it keeps Lua and CEL out of the binaries.
package gitopshealthtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

// Page is the documentation page the checks are read from.
func Page() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "docs", "gitops-health.md")
}

// Checks are the documented health checks per kind.
type Checks struct {
	// Lua is Argo CD's health script per kind.
	Lua map[string]string
	// CEL is Flux's healthCheckExprs entry per kind.
	CEL map[string]Exprs
}

// Exprs is one entry of a Flux Kustomization's spec.healthCheckExprs.
type Exprs struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// Load reads the argocd-cm ConfigMap and the Flux Kustomization the page
// shows.
func Load() (*Checks, error) {
	b, err := os.ReadFile(Page())
	if err != nil {
		return nil, err
	}
	c := &Checks{Lua: map[string]string{}, CEL: map[string]Exprs{}}
	for _, m := range yamlBlock.FindAllSubmatch(b, -1) {
		var doc struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
			Spec struct {
				HealthCheckExprs []Exprs `json:"healthCheckExprs"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(m[1], &doc); err != nil {
			return nil, fmt.Errorf("%s: a yaml block does not parse: %w", Page(), err)
		}
		switch doc.Kind {
		case "ConfigMap":
			for k, v := range doc.Data {
				// resource.customizations.health.<group>_<kind>
				if m := regexp.MustCompile(`^resource\.customizations\.health\.[a-z.]+_([A-Za-z]+)$`).FindStringSubmatch(k); m != nil {
					c.Lua[m[1]] = v
				}
			}
		case "Kustomization":
			for _, e := range doc.Spec.HealthCheckExprs {
				c.CEL[e.Kind] = e
			}
		}
	}
	if len(c.Lua) == 0 || len(c.CEL) == 0 {
		return nil, fmt.Errorf("%s: no argocd-cm ConfigMap or Flux Kustomization block found", Page())
	}
	return c, nil
}

// Unstructured is obj, a typed object of kind gvk, as the API server
// serves it.
func Unstructured(obj k8sruntime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Kstatus is cli-utils' kstatus of u.
func Kstatus(u *unstructured.Unstructured) (status.Status, error) {
	res, err := status.Compute(u)
	if err != nil {
		return "", err
	}
	return res.Status, nil
}

// ArgoCD runs the kind's Lua health script with obj bound to u, as Argo CD
// does, and returns the health status (Healthy, Progressing, Degraded,
// Suspended, Missing, Unknown) and message.
func (c *Checks) ArgoCD(u *unstructured.Unstructured) (string, string, error) {
	script, ok := c.Lua[u.GetKind()]
	if !ok {
		return "", "", fmt.Errorf("no Argo CD health script for %s", u.GetKind())
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, u.Object))
	if err := L.DoString(script); err != nil {
		return "", "", fmt.Errorf("the %s health script: %w", u.GetKind(), err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the %s health script returned %s, not a table", u.GetKind(), L.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message")), nil
}

// toLua converts JSON-like Go values into Lua values: objects become
// tables with string keys, arrays tables indexed from 1 (what Argo CD's
// conversion gives a script).
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	default:
		return lua.LString(fmt.Sprint(v))
	}
}

// Flux evaluates the kind's healthCheckExprs the way kustomize-controller
// does: InProgress while status.observedGeneration exists and differs from
// metadata.generation; otherwise the inProgress, failed and current
// expressions in that order, the first one true deciding, InProgress when
// none is. The expressions see metadata, spec and status as
// google.protobuf.Struct variables; an evaluation error (for example an
// object without status yet) is returned as is: Flux keeps waiting on it
// until the Kustomization's timeout.
func (c *Checks) Flux(u *unstructured.Unstructured) (status.Status, error) {
	e, ok := c.CEL[u.GetKind()]
	if !ok {
		return "", fmt.Errorf("no healthCheckExprs entry for %s", u.GetKind())
	}
	if og, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); found && og != u.GetGeneration() {
		return status.InProgressStatus, nil
	}
	for _, x := range []struct {
		expr string
		st   status.Status
	}{{e.InProgress, status.InProgressStatus}, {e.Failed, status.FailedStatus}, {e.Current, status.CurrentStatus}} {
		if x.expr == "" {
			continue
		}
		ok, err := evalBool(x.expr, u.Object)
		if err != nil {
			return "", err
		}
		if ok {
			return x.st, nil
		}
	}
	return status.InProgressStatus, nil
}

// evalBool compiles expr in the environment Flux's runtime/cel package
// builds and evaluates it against obj.
func evalBool(expr string, obj map[string]any) (bool, error) {
	opts := []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	}
	for _, v := range []string{"metadata", "spec", "status"} {
		opts = append(opts, cel.Variable(v, cel.ObjectType("google.protobuf.Struct")))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return false, err
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return false, fmt.Errorf("compiling %q: %w", expr, iss.Err())
	}
	if ast.OutputType() != cel.BoolType {
		return false, fmt.Errorf("%q is of type %s, not bool", expr, ast.OutputType())
	}
	prg, err := env.Program(ast)
	if err != nil {
		return false, err
	}
	val, _, err := prg.ContextEval(context.Background(), obj)
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", expr, err)
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%q did not give a bool", expr)
	}
	return bool(b), nil
}

// Assert expects kstatus, Flux's healthCheckExprs and Argo CD's Lua to
// report kstatus, flux ("": the expressions do not evaluate, so Flux
// waits) and argo for u, a custom resource as the API server serves it.
// readyMessage, when not empty, is the message Argo CD must show (the
// Ready condition's).
func (c *Checks) Assert(g gomega.Gomega, u *unstructured.Unstructured, kstatus, flux status.Status, argo, readyMessage string) {
	ks, err := Kstatus(u)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ks).To(gomega.Equal(kstatus), "kstatus of %v", u.Object["status"])

	got, err := c.Flux(u)
	if flux == "" {
		g.Expect(err).To(gomega.HaveOccurred(), "Flux's expressions should not evaluate without status, got %s", got)
	} else {
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(got).To(gomega.Equal(flux), "Flux healthCheckExprs on %v", u.Object["status"])
	}

	health, msg, err := c.ArgoCD(u)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(health).To(gomega.Equal(argo), "Argo CD health of %v (message %q)", u.Object["status"], msg)
	if readyMessage != "" {
		g.Expect(msg).To(gomega.Equal(readyMessage))
	}
}

// ReadyMessage is the message of the Ready condition in conds, or "".
func ReadyMessage(conds []metav1.Condition) string {
	if c := apimeta.FindStatusCondition(conds, "Ready"); c != nil {
		return c.Message
	}
	return ""
}
