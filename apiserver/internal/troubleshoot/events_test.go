package troubleshoot_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/events"
)

// event creates an Event about obj (kind) that last happened ago before now.
func event(t *testing.T, name, kind string, obj client.Object, typ, reason string, ago time.Duration) {
	t.Helper()
	at := metav1.NewTime(time.Now().Add(-ago).Truncate(time.Second))
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: obj.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()},
		Type:           typ, Reason: reason, Message: reason + " of " + obj.GetName(), Count: 2,
		FirstTimestamp: at, LastTimestamp: at, Source: corev1.EventSource{Component: "kubelet"},
	})
}

func (a *api) events(id, query string) (int, events.List, string) {
	a.t.Helper()
	code, b := a.do(http.MethodGet, id+"/events?"+query, "")
	var l events.List
	if code == http.StatusOK {
		NewWithT(a.t).Expect(json.Unmarshal(b, &l)).To(Succeed(), string(b))
	}
	return code, l, string(b)
}

func names(l events.List) []string {
	var out []string
	for _, e := range l.Events {
		out = append(out, e.Reason+"/"+e.Object.Kind)
	}
	return out
}

func TestEventsOfTheTreeNewestFirstFilteredAndPaged(t *testing.T) {
	g := NewWithT(t)
	a := newAPI(t)
	id := a.vmcluster("ev")
	pods := installed(t, a.ns, "ev", 1)
	other := newAPI(t)
	otherPods := installed(t, other.ns, "ev", 1)
	// helm-controller's Events are about the HelmRelease (by its UID, the
	// vmcluster's id).
	hr := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ev", Namespace: a.ns, UID: types.UID(id)}}
	event(t, "pod-unhealthy", "Pod", pods[0], corev1.EventTypeWarning, "Unhealthy", 3*time.Minute)
	event(t, "pod-backoff", "Pod", pods[0], corev1.EventTypeWarning, "BackOff", 2*time.Minute)
	event(t, "hr-info", "HelmRelease", hr, corev1.EventTypeNormal, "InstallSucceeded", time.Hour)
	// Not of the tree: a Pod of the same name in another namespace, and
	// an unrelated object of this namespace.
	event(t, "elsewhere", "Pod", otherPods[0], corev1.EventTypeWarning, "Unhealthy", time.Minute)
	event(t, "unrelated", "ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: a.ns}}, corev1.EventTypeWarning, "Unhealthy", time.Minute)

	code, l, body := a.events(id, "")
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(names(l)).To(Equal([]string{"BackOff/Pod", "Unhealthy/Pod", "InstallSucceeded/HelmRelease"}))
	g.Expect(l.Events[0].Object.Name).To(Equal(pods[0].Name))
	g.Expect(l.Events[0].Count).To(BeEquivalentTo(2))
	g.Expect(l.Events[0].Source).To(Equal("kubelet"))
	g.Expect(l.NextPageToken).To(BeEmpty())

	_, l, _ = a.events(id, "type=Normal")
	g.Expect(names(l)).To(Equal([]string{"InstallSucceeded/HelmRelease"}))
	_, l, _ = a.events(id, "reason=Unhealthy")
	g.Expect(names(l)).To(Equal([]string{"Unhealthy/Pod"}))
	_, l, _ = a.events(id, "since=30m")
	g.Expect(names(l)).To(Equal([]string{"BackOff/Pod", "Unhealthy/Pod"}))
	_, l, _ = a.events(id, "since="+url.QueryEscape(time.Now().Add(-150*time.Second).UTC().Format(time.RFC3339)))
	g.Expect(names(l)).To(Equal([]string{"BackOff/Pod"}))

	// Paging one by one walks the same list.
	var walked []string
	q := "page_size=1"
	for range 5 {
		code, l, body = a.events(id, q)
		g.Expect(code).To(Equal(http.StatusOK), body)
		walked = append(walked, names(l)...)
		if l.NextPageToken == "" {
			break
		}
		q = "page_size=1&page_token=" + url.QueryEscape(l.NextPageToken)
	}
	g.Expect(walked).To(Equal([]string{"BackOff/Pod", "Unhealthy/Pod", "InstallSucceeded/HelmRelease"}))

	code, _, body = a.events(id, "type=Error&since=yesterday&page_size=5000&page_token=x")
	g.Expect(code).To(Equal(http.StatusBadRequest), body)
	for _, f := range []string{`"field":"type"`, `"field":"since"`, `"field":"page_size"`, `"field":"page_token"`} {
		g.Expect(strings.Count(body, f)).To(Equal(1), f+" in "+body)
	}
	code, _, _ = a.events("no-such-vmcluster", "")
	g.Expect(code).To(Equal(http.StatusNotFound))
}
