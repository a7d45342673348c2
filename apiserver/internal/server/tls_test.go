package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// writePair writes a self-signed certificate for cn and its key.
func writePair(t *testing.T, dir, cn string, mod time.Time) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{cn},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for f, b := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(f, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

func servedCN(t *testing.T, r *CertReloader) string {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

func TestCertReloaderPicksUpRenewals(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-time.Hour)
	certFile, keyFile := writePair(t, dir, "first", t0)
	r, err := NewCertReloader(certFile, keyFile, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	if cn := servedCN(t, r); cn != "first" {
		t.Fatalf("serves %q; want first", cn)
	}
	writePair(t, dir, "renewed", t0.Add(time.Minute))
	if cn := servedCN(t, r); cn != "first" {
		t.Fatalf("serves %q before the next check; want first", cn)
	}
	now = now.Add(certCheckInterval)
	if cn := servedCN(t, r); cn != "renewed" {
		t.Fatalf("serves %q after the files changed; want renewed", cn)
	}
	// A broken pair keeps the last good certificate.
	if err := os.WriteFile(keyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(certCheckInterval)
	if cn := servedCN(t, r); cn != "renewed" {
		t.Fatalf("serves %q after a broken write; want the previous certificate", cn)
	}
	if _, err := NewCertReloader(certFile, keyFile, logr.Discard()); err == nil {
		t.Fatal("a broken pair was accepted at start-up")
	}
}
