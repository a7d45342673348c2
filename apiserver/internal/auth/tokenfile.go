package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// HashToken is the form a token takes in a token file: "sha256:" and the
// hex SHA-256 of the token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TokenFile authenticates static bearer tokens listed, hashed, in a CSV
// file — one line per token:
//
//	sha256:<hex>,<user name>,<uid>,"<group>,<group>"
//
// (uid and groups optional; lines starting with # are comments). The
// file is checked for changes at most once per second and re-read when
// its size or modification time changed; a file that no longer parses
// keeps the previous tokens and logs the error.
type TokenFile struct {
	path string
	log  logr.Logger
	now  func() time.Time

	mu      sync.Mutex
	checked time.Time
	modTime time.Time
	size    int64
	tokens  map[[sha256.Size]byte]*User
}

// NewTokenFile reads path; an unreadable or invalid file is an error.
func NewTokenFile(path string, log logr.Logger) (*TokenFile, error) {
	f := &TokenFile{path: path, log: log, now: time.Now}
	if err := f.reload(true); err != nil {
		return nil, err
	}
	return f, nil
}

// AuthenticateToken implements Authenticator.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (*User, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := f.now(); now.Sub(f.checked) >= time.Second {
		f.checked = now
		if err := f.reload(false); err != nil {
			f.log.Error(err, "Keeping the previous static tokens", "file", f.path)
		}
	}
	sum := sha256.Sum256([]byte(token))
	for h, u := range f.tokens {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			return u, true, nil
		}
	}
	return nil, false, nil
}

// reload re-reads the file if it changed (or always with force). The
// caller holds f.mu, except in NewTokenFile.
func (f *TokenFile) reload(force bool) error {
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if !force && st.ModTime().Equal(f.modTime) && st.Size() == f.size {
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	tokens, err := ParseTokenFile(data)
	if err != nil {
		return fmt.Errorf("token file %s: %w", f.path, err)
	}
	f.tokens, f.modTime, f.size = tokens, st.ModTime(), st.Size()
	if !force {
		f.log.Info("Reloaded the static tokens", "file", f.path, "tokens", len(tokens))
	}
	return nil
}

// ParseTokenFile parses the content of a token file.
func ParseTokenFile(data []byte) (map[[sha256.Size]byte]*User, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	out := map[[sha256.Size]byte]*User{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 2 || len(rec) > 4 {
			return nil, fmt.Errorf("line %d: want sha256:<hex>,user[,uid[,groups]]", line)
		}
		hexSum, ok := strings.CutPrefix(rec[0], "sha256:")
		raw, err := hex.DecodeString(hexSum)
		if !ok || err != nil || len(raw) != sha256.Size {
			return nil, fmt.Errorf("line %d: the token must be given as sha256:<64 hex digits> (never in clear)", line)
		}
		if rec[1] == "" {
			return nil, fmt.Errorf("line %d: empty user name", line)
		}
		u := &User{Name: rec[1]}
		if len(rec) > 2 {
			u.UID = rec[2]
		}
		if len(rec) > 3 && rec[3] != "" {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		var key [sha256.Size]byte
		copy(key[:], raw)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: the same token is listed twice", line)
		}
		out[key] = u
	}
}
