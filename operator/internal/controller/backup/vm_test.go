package backup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/tidbcloud/ops-server/operator/testenv"
)

// The VictoriaMetrics cluster the tests back up: real vmstorage, vminsert
// and vmselect binaries (v1.100.0-cluster, built by `make tools` into
// bin/), every listener on 127.0.0.1.

var httpc = &http.Client{Timeout: 30 * time.Second}

// vmStorage is one vmstorage process.
type vmStorage struct {
	proc       *testenv.Process
	dataDir    string
	httpAddr   string // host:port of the HTTP API (snapshots, /metrics)
	insertAddr string
	selectAddr string
}

func (s *vmStorage) URL() string { return "http://" + s.httpAddr }

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// startProcess runs a bin/ binary with its log in a directory of its own.
func startProcess(t *testing.T, name string, args ...string) *testenv.Process {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), name+"-")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	p, err := testenv.StartProcess(name, dir, args, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("----- %s log (%s) -----\n%s", name, p.LogPath, p.Log(3000))
		}
		_ = p.Stop(10 * time.Second)
	})
	return p
}

func startVMStorage(t *testing.T, dataDir string) *vmStorage {
	t.Helper()
	s := &vmStorage{dataDir: dataDir, httpAddr: freeAddr(t), insertAddr: freeAddr(t), selectAddr: freeAddr(t)}
	s.proc = startProcess(t, "vmstorage",
		"-storageDataPath="+dataDir,
		"-httpListenAddr="+s.httpAddr,
		"-vminsertAddr="+s.insertAddr,
		"-vmselectAddr="+s.selectAddr,
		"-retentionPeriod=1y",
	)
	NewWithT(t).Expect(s.proc.WaitHTTPOK(context.Background(), s.URL()+"/health", time.Minute)).To(Succeed())
	return s
}

// startVMSelect starts a vmselect over the given vmstorages and returns
// its base URL.
func startVMSelect(t *testing.T, nodes ...*vmStorage) string {
	t.Helper()
	addr := freeAddr(t)
	var sn []string
	for _, n := range nodes {
		sn = append(sn, n.selectAddr)
	}
	p := startProcess(t, "vmselect", "-storageNode="+strings.Join(sn, ","), "-httpListenAddr="+addr, "-search.latencyOffset=0s")
	NewWithT(t).Expect(p.WaitHTTPOK(context.Background(), "http://"+addr+"/health", time.Minute)).To(Succeed())
	return "http://" + addr
}

func startVMInsert(t *testing.T, nodes ...*vmStorage) string {
	t.Helper()
	addr := freeAddr(t)
	var sn []string
	for _, n := range nodes {
		sn = append(sn, n.insertAddr)
	}
	p := startProcess(t, "vminsert", "-storageNode="+strings.Join(sn, ","), "-httpListenAddr="+addr)
	NewWithT(t).Expect(p.WaitHTTPOK(context.Background(), "http://"+addr+"/health", time.Minute)).To(Succeed())
	return "http://" + addr
}

// startVMStorages starts n vmstorages with fresh data directories.
func startVMStorages(t *testing.T, n int) []*vmStorage {
	t.Helper()
	root := t.TempDir()
	out := make([]*vmStorage, n)
	for i := range out {
		out[i] = startVMStorage(t, filepath.Join(root, fmt.Sprintf("vmstorage-%d", i)))
	}
	return out
}

const metricName = "backup_roundtrip"

// writeSeries writes n series of metricName with samples samples each,
// spaced a minute apart and ending two minutes ago, through vminsert's
// Prometheus import API.
func writeSeries(t *testing.T, vminsert string, n, samples int) {
	t.Helper()
	g := NewWithT(t)
	end := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
	var b strings.Builder
	for i := 0; i < n; i++ {
		for k := 0; k < samples; k++ {
			ts := end.Add(-time.Duration(samples-1-k) * time.Minute).UnixMilli()
			fmt.Fprintf(&b, "%s{series=\"%d\",job=\"backup-test\"} %d %d\n", metricName, i, i*samples+k, ts)
		}
	}
	resp, err := httpc.Post(vminsert+"/insert/0/prometheus/api/v1/import/prometheus", "text/plain", strings.NewReader(b.String()))
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusNoContent), string(body))
}

// forceFlush makes what a vmstorage received searchable and on disk.
func forceFlush(t *testing.T, nodes ...*vmStorage) {
	t.Helper()
	for _, n := range nodes {
		resp, err := httpc.Get(n.URL() + "/internal/force_flush")
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		NewWithT(t).Expect(resp.StatusCode).To(Equal(http.StatusOK))
	}
}

// countSeries returns how many series of metricName vmselect finds in the
// last day.
func countSeries(vmselect string) (int, error) {
	q := url.Values{
		"match[]": {metricName},
		"start":   {strconv.FormatInt(time.Now().Add(-24*time.Hour).Unix(), 10)},
		"end":     {strconv.FormatInt(time.Now().Unix(), 10)},
	}
	var out struct {
		Status string              `json:"status"`
		Data   []map[string]string `json:"data"`
	}
	if err := testenv.GetJSON(context.Background(), httpc, vmselect+"/select/0/prometheus/api/v1/series?"+q.Encode(), &out); err != nil {
		return 0, err
	}
	return len(out.Data), nil
}

// countSamples returns the number of samples of metricName vmselect
// finds (sum over series of count_over_time over the last day).
func countSamples(vmselect string) (int, error) {
	q := url.Values{"query": {"sum(count_over_time(" + metricName + "[1d]))"}, "nocache": {"1"}}
	var out struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := testenv.GetJSON(context.Background(), httpc, vmselect+"/select/0/prometheus/api/v1/query?"+q.Encode(), &out); err != nil {
		return 0, err
	}
	if len(out.Data.Result) == 0 || len(out.Data.Result[0].Value) != 2 {
		return 0, nil
	}
	s, _ := out.Data.Result[0].Value[1].(string)
	n, err := strconv.Atoi(s)
	return n, err
}

var createCountRe = regexp.MustCompile(`(?m)^vm_http_requests_total\{path="/snapshot/create"\} ([0-9]+)$`)

// snapshotCreates is how many /snapshot/create calls a vmstorage served.
func snapshotCreates(t *testing.T, n *vmStorage) int {
	t.Helper()
	resp, err := httpc.Get(n.URL() + "/metrics")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	m := createCountRe.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

// snapshots lists a vmstorage's snapshots.
func snapshots(t *testing.T, n *vmStorage) []string {
	t.Helper()
	resp, err := httpc.Get(n.URL() + "/snapshot/list")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var out struct {
		Snapshots []string `json:"snapshots"`
	}
	NewWithT(t).Expect(json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out)).To(Succeed())
	return out.Snapshots
}

// vmrestore restores the backup at src into the empty directory dst.
func vmrestore(t *testing.T, src, dst string) string {
	t.Helper()
	bin, err := testenv.Binary("vmrestore")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-src="+src, "-storageDataPath="+dst, "-httpListenAddr="+freeAddr(t)).CombinedOutput()
	NewWithT(t).Expect(err).NotTo(HaveOccurred(), "vmrestore: %s", out)
	return string(out)
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	NewWithT(t).Expect(filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})).To(Succeed())
	return n
}
