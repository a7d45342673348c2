// Package binwatch tells when a binary was rebuilt: ops-dev restarts
// ops-apiserver or ops-operator when the Tiltfile's local mode rebuilt it.
package binwatch

import (
	"os"
	"time"
)

// binaryStamp is what tells a rebuilt binary from the one running.
type binaryStamp struct {
	size    int64
	modTime time.Time
}

func stampOf(path string) (binaryStamp, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return binaryStamp{}, false
	}
	return binaryStamp{size: fi.Size(), modTime: fi.ModTime()}, true
}

// Watcher reports a binary as rebuilt when its stamp changed and then
// stayed the same for one more poll (the build finished writing it).
type Watcher struct {
	running, pending map[string]binaryStamp
}

// New watches paths, taking their current content as running.
func New(paths ...string) *Watcher {
	w := &Watcher{running: map[string]binaryStamp{}, pending: map[string]binaryStamp{}}
	for _, p := range paths {
		w.running[p], _ = stampOf(p)
	}
	return w
}

// Poll returns the binaries rebuilt since the last restart of each.
func (w *Watcher) Poll() []string {
	var rebuilt []string
	for p, running := range w.running {
		now, ok := stampOf(p)
		if !ok || now == running {
			delete(w.pending, p)
			continue
		}
		if prev, seen := w.pending[p]; seen && prev == now {
			w.running[p] = now
			delete(w.pending, p)
			rebuilt = append(rebuilt, p)
			continue
		}
		w.pending[p] = now
	}
	return rebuilt
}
