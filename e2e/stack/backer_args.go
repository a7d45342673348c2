package stack

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// localPortFunc returns the local port standing in for a container port of
// a Pod.
type localPortFunc func(pod types.NamespacedName, port int) (int, error)

// localArgs turns the flags of the Pod self's container into the flags of
// its local process:
//   - a listen address (-httpListenAddr=:8482, ...) becomes
//     127.0.0.1:<the Pod's local port for 8482>; one the Pod leaves out is
//     added with the binary's default port, so no two processes collide;
//   - an address list of other Pods (-storageNode=, -selectNode=), each
//     <pod>.<service>.<namespace>[.svc...]:<port>, becomes the local ports
//     of those Pods;
//   - a path flag in paths (-storageDataPath) becomes the given local path
//     (added when missing); -cacheDataPath is dropped (no cache on disk);
//   - the component's extra flags are added.
//
// It returns the flags and the Pod's container ports with their local
// ports.
func localArgs(c *component, args []string, self types.NamespacedName, paths map[string]string, local localPortFunc) ([]string, map[int]int, error) {
	ports := map[int]int{}
	listen := func(name string, port int) (string, error) {
		lp, err := local(self, port)
		if err != nil {
			return "", err
		}
		ports[port] = lp
		return fmt.Sprintf("-%s=127.0.0.1:%d", name, lp), nil
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(args)+len(c.listen)+len(c.extra))
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok {
			out = append(out, a)
			continue
		}
		seen[name] = true
		switch {
		case name == "cacheDataPath":
		case paths[name] != "":
			out = append(out, "-"+name+"="+paths[name])
		case hasKey(c.listen, name):
			_, p, err := net.SplitHostPort(value)
			if err != nil {
				return nil, nil, fmt.Errorf("-%s=%s: %w", name, value, err)
			}
			port, err := strconv.Atoi(p)
			if err != nil {
				return nil, nil, fmt.Errorf("-%s=%s: %w", name, value, err)
			}
			f, err := listen(name, port)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, f)
		case name == "storageNode" || name == "selectNode":
			list, err := localAddrs(value, self.Namespace, local)
			if err != nil {
				return nil, nil, fmt.Errorf("-%s: %w", name, err)
			}
			out = append(out, "-"+name+"="+list)
		default:
			out = append(out, a)
		}
	}
	names := make([]string, 0, len(c.listen)+len(paths))
	for name := range c.listen {
		names = append(names, name)
	}
	for name := range paths {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case seen[name]:
		case paths[name] != "":
			out = append(out, "-"+name+"="+paths[name])
		case c.listen[name] != 0:
			f, err := listen(name, c.listen[name])
			if err != nil {
				return nil, nil, err
			}
			out = append(out, f)
		}
	}
	return append(out, c.extra...), ports, nil
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// localAddrs translates a comma-separated list of Pod addresses
// (<pod>.<service>.<namespace>[.svc[.<domain>]]:<port>, a Pod of namespace ns
// when it has no namespace part); empty entries are dropped, IP addresses
// kept.
func localAddrs(list, ns string, local localPortFunc) (string, error) {
	var out []string
	for _, addr := range strings.Split(list, ",") {
		if addr == "" {
			continue
		}
		if strings.HasPrefix(addr, "srv+") {
			return "", fmt.Errorf("%s: DNS SRV discovery is not supported by the local stack", addr)
		}
		host, p, err := net.SplitHostPort(addr)
		if err != nil {
			return "", err
		}
		port, err := strconv.Atoi(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", addr, err)
		}
		parts := strings.Split(host, ".")
		if net.ParseIP(host) != nil || host == "localhost" || len(parts) < 2 {
			out = append(out, addr)
			continue
		}
		pod := types.NamespacedName{Namespace: ns, Name: parts[0]}
		if len(parts) >= 3 {
			pod.Namespace = parts[2]
		}
		lp, err := local(pod, port)
		if err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("127.0.0.1:%d", lp))
	}
	return strings.Join(out, ","), nil
}

// portList renders container ports and their local ports for
// PortsAnnotation: "8400=127.0.0.1:40001,8482=127.0.0.1:40002".
func portList(ports map[int]int) string {
	keys := make([]int, 0, len(ports))
	for k := range ports {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d=127.0.0.1:%d", k, ports[k]))
	}
	return strings.Join(out, ",")
}

// portRegistry hands out the local ports of Pods' container ports, one per
// Pod name and container port, kept for the life of the stack: a Pod
// re-created under its name (a StatefulSet's) listens where the others
// already look for it, also when they learn of it before it runs.
type portRegistry struct {
	mu    sync.Mutex
	ports map[types.NamespacedName]map[int]int
	taken map[int]bool
}

func newPortRegistry() *portRegistry {
	return &portRegistry{ports: map[types.NamespacedName]map[int]int{}, taken: map[int]bool{}}
}

func (r *portRegistry) local(pod types.NamespacedName, port int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if lp, ok := r.ports[pod][port]; ok {
		return lp, nil
	}
	for range 10 {
		lp, err := testenv.FreePort()
		if err != nil {
			return 0, err
		}
		if r.taken[lp] {
			continue
		}
		if r.ports[pod] == nil {
			r.ports[pod] = map[int]int{}
		}
		r.ports[pod][port], r.taken[lp] = lp, true
		return lp, nil
	}
	return 0, errors.New("no free local port")
}
