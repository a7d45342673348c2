package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	listersv1 "k8s.io/client-go/listers/core/v1"
)

// ServicesAddress is where `make dev` publishes the Services of the backed
// Pods (see serviceProxy).
const ServicesAddress = "127.0.0.1:8427"

// serviceProxy publishes every Service whose Pods the backer backs on one
// local address, as http://<address>/<namespace>/<service>/<path>: a
// request goes to <path> on the HTTP port of one Ready Pod behind the
// Service, taken in turn. ops-apiserver's endpoint templates in the local
// stack point here (see StartAPIServer), so the endpoints the REST API
// shows for a vmcluster answer from the host.
type serviceProxy struct {
	addr     string
	srv      *http.Server
	backer   *podBacker
	services listersv1.ServiceLister
	next     atomic.Uint64
}

// startServiceProxy listens on addr (a free port when empty).
func startServiceProxy(addr string, b *podBacker, services listersv1.ServiceLister) (*serviceProxy, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &serviceProxy{addr: ln.Addr().String(), backer: b, services: services}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

func (p *serviceProxy) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// ServicesURL is the base URL of the Service proxy ("" before the backer
// runs): <ServicesURL>/<namespace>/<service>/<path>.
func (s *Stack) ServicesURL() string {
	if s.backer == nil {
		return ""
	}
	return "http://" + s.servicesAddr
}

func (p *serviceProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		http.Error(w, "want /<namespace>/<service>/<path>", http.StatusNotFound)
		return
	}
	target, err := p.backend(parts[0], parts[1])
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	rest := "/"
	if len(parts) == 3 {
		rest += parts[2]
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
			pr.Out.Host = target.Host
		},
	}
	rp.ServeHTTP(w, r)
}

// backend picks the process of a Ready Pod behind the Service, in turn.
func (p *serviceProxy) backend(ns, name string) (*url.URL, error) {
	svc, err := p.services.Services(ns).Get(name)
	if err != nil {
		return nil, fmt.Errorf("service %s/%s: %w", ns, name, err)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil, fmt.Errorf("service %s/%s has no selector", ns, name)
	}
	pods, err := p.backer.pods.Pods(ns).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return nil, err
	}
	var eps []string
	for _, pod := range pods {
		if !podReady(pod) || pod.Status.Phase != corev1.PodRunning {
			continue
		}
		if ep, ok := p.backer.endpointOf(pod); ok {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return nil, errors.New("no Ready Pod with a local process behind service " + ns + "/" + name)
	}
	return url.Parse(eps[p.next.Add(1)%uint64(len(eps))])
}
