package service

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvshadow/kvshadow/backends/cfkv"
	"github.com/kvshadow/kvshadow/kv"
	"github.com/kvshadow/kvshadow/service/admin"
)

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kvshadow-proxy test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServesTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	r := start(t, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(r.api, "https://127.0.0.1:") {
		t.Fatalf("the API is not served over TLS: %s", r.api)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	cl, err := cfkv.New(cfkv.Config{AccountID: r.c.Account, NamespaceID: DemoNamespace, APIToken: r.c.secrets.token, BaseURL: r.api, HTTPClient: hc, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Put(t.Context(), "wordle:tls", []byte("v"), kv.PutOptions{}); err != nil {
		t.Fatalf("Put over TLS: %v", err)
	}
	if v, err := cl.Get(t.Context(), "wordle:tls"); err != nil || string(v) != "v" {
		t.Fatalf("Get over TLS = %q, %v", v, err)
	}
	// Plain HTTP to the TLS listener gets nowhere.
	if resp, err := http.Get("http" + strings.TrimPrefix(r.api, "https") + "accounts/x/storage/kv/namespaces/y/keys"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP answered %d", resp.StatusCode)
		}
	}
	// The admin listener serves TLS with the front's certificate: its
	// token does not cross the network in the clear.
	adminOverTLS(t, r, hc)
}

// adminOverTLS checks that r's admin API answers over TLS (hc trusts its
// certificate), and not in plain HTTP.
func adminOverTLS(t *testing.T, r *running, hc *http.Client) {
	t.Helper()
	if !strings.HasPrefix(r.admin, "https://127.0.0.1:") {
		t.Fatalf("the admin API is not served over TLS: %s", r.admin)
	}
	cl := &admin.Client{URL: r.admin, Token: r.c.secrets.admin, HTTP: hc}
	if _, err := cl.Stats(t.Context()); err != nil {
		t.Fatalf("GET /stats over TLS: %v", err)
	}
	if resp, err := http.Get("http" + strings.TrimPrefix(r.admin, "https") + "healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Fatalf("plain HTTP to the admin listener answered %d", resp.StatusCode)
		}
	}
}

func TestAdminServesTLSWithItsOwnCertificate(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	r := start(t, "--admin-tls-cert", certFile, "--admin-tls-key", keyFile)
	if !strings.HasPrefix(r.api, "http://") {
		t.Fatalf("the API should stay plain without --tls-cert: %s", r.api)
	}
	adminOverTLS(t, r, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}})
}

func TestBadCertificateIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "x.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{"--demo", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--tls-cert", bad, "--tls-key", bad}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	err = Run(t.Context(), c, &strings.Builder{}, &strings.Builder{})
	if !errors.Is(err, ErrUsage) || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("Run with a bad certificate = %v (exit %d)", err, ExitCode(err))
	}
}
