package testenv

import "os"

// InClusterNamespaceFile is where a Pod finds its namespace, and where
// controller-runtime looks for the namespace of its leader election Lease
// when none is configured (Flux's controllers configure none).
const InClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Isolated is a ProcessOutput.Wrapper that runs a binary as a Pod's
// container sees itself, with unshare(1) (util-linux; Linux only): in its
// own UTS namespace with hostname as its hostname, so a controller-runtime
// leader election identity ("<hostname>_<uuid>") names the process, and,
// when namespace is set, in its own mount namespace with a tmpfs on
// /var/run holding InClusterNamespaceFile, so a controller that takes its
// Lease namespace from the in-cluster file (Flux) can elect a leader
// outside a cluster. The host's /var/run is hidden from that process only.
// Run as non-root, unshare maps the user to root in a new user namespace
// (unprivileged user namespaces must be allowed).
func Isolated(hostname, namespace string) []string {
	w := []string{"unshare"}
	if os.Geteuid() != 0 {
		w = append(w, "--map-root-user")
	}
	w = append(w, "--uts")
	script := `printf %s "$1" > /proc/sys/kernel/hostname || exit 111
`
	if namespace != "" {
		w = append(w, "--mount", "--propagation", "private")
		script += `mount -t tmpfs tmpfs /var/run/ && mkdir -p /var/run/secrets/kubernetes.io/serviceaccount && printf %s "$2" > ` + InClusterNamespaceFile + ` || exit 111
`
	}
	script += `shift 2
exec "$@"
`
	return append(w, "sh", "-c", script, "isolated", hostname, namespace)
}
