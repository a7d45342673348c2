// Package loopback says whether an address a server is told to listen on
// reaches only this machine: the rule of every endpoint served without
// authentication (ops-apiserver's --insecure-disable-auth, and both
// binaries' --pprof-bind-address).
package loopback

import (
	"net"
	"strings"
)

// IsAddress reports whether the host of a host:port is a loopback
// address: an IP in 127.0.0.0/8, ::1, or localhost. An empty host (every
// interface) is not.
func IsAddress(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
