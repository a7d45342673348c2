package loopback

import "testing"

func TestIsAddress(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6060": true, "127.1.2.3:1": true, "[::1]:6060": true, "localhost:6060": true, "LocalHost:1": true,
		":6060": false, "0.0.0.0:6060": false, "10.0.0.1:6060": false, "[::]:6060": false, "127.0.0.1": false, "": false,
		"example.internal:6060": false,
	} {
		if got := IsAddress(addr); got != want {
			t.Errorf("IsAddress(%q) = %t, want %t", addr, got, want)
		}
	}
}
