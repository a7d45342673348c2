package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// certCheckInterval is how often the certificate files are checked for
// changes (at most; only when a TLS handshake happens).
const certCheckInterval = 5 * time.Second

// CertReloader serves a certificate from a pair of PEM files and re-reads
// them when their size or modification time changed, so a renewed
// certificate (cert-manager, a rotated Secret) is used by the next
// connection without a restart. A pair that no longer loads keeps the
// previous certificate and logs the error.
type CertReloader struct {
	certFile, keyFile string
	log               logr.Logger
	now               func() time.Time

	mu      sync.Mutex
	checked time.Time
	stamp   string
	cert    *tls.Certificate
}

// NewCertReloader loads the pair; an unreadable or invalid pair is an
// error.
func NewCertReloader(certFile, keyFile string, log logr.Logger) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, log: log, now: time.Now}
	if err := r.reload(); err != nil {
		return nil, err
	}
	r.checked = r.now()
	return r, nil
}

// GetCertificate implements tls.Config.GetCertificate.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); now.Sub(r.checked) >= certCheckInterval {
		r.checked = now
		if err := r.reload(); err != nil {
			r.log.Error(err, "Keeping the previous TLS certificate", "certFile", r.certFile)
		}
	}
	return r.cert, nil
}

// reload re-reads the pair if either file changed. The caller holds r.mu,
// except in NewCertReloader.
func (r *CertReloader) reload() error {
	stamp, err := fileStamp(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	if r.cert != nil && stamp == r.stamp {
		return nil
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("loading the TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	if r.cert != nil {
		r.log.Info("Reloaded the TLS certificate", "certFile", r.certFile)
	}
	r.cert, r.stamp = &cert, stamp
	return nil
}

func fileStamp(paths ...string) (string, error) {
	var s string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("TLS: %w", err)
		}
		s += fmt.Sprintf("%s:%d:%d;", p, st.Size(), st.ModTime().UnixNano())
	}
	return s, nil
}

// TLSListener wraps ln so that it serves TLS 1.2+ with the reloader's
// certificate.
func TLSListener(ln net.Listener, r *CertReloader) (net.Listener, error) {
	if r == nil {
		return nil, errors.New("no certificate")
	}
	return tls.NewListener(ln, &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: r.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}), nil
}
