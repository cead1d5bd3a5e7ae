// Command kubelet-streams serves the kubelet's streaming API for devcluster's Python kubelet.
//
// The API server reaches `kubectl exec` and `kubectl port-forward` through the node's kubelet
// port, speaking SPDY/3.1 (or WebSocket up to v4.channel.k8s.io). No maintained Python library
// speaks SPDY, so this program fronts that port instead: it serves /exec and /portForward with
// the server code the real kubelet uses (k8s.io/cri-streaming), passes container logs and
// /healthz to the Python kubelet on loopback and answers 404 to every other path. It asks that
// backend where a container runs (an nsenter prefix and the container's environment) and which
// IP a pod has; it knows nothing of pods itself.
//
// Once it listens it prints one line, "serving on <host:port>", to standard output, so a
// launcher that asked for port 0 learns the port and knows the server is up.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// options are the command-line flags.
type options struct {
	listen       string
	certFile     string
	keyFile      string
	clientCAFile string
	backend      string
	access       access
}

func main() {
	var opts options
	flag.StringVar(&opts.listen, "listen", "127.0.0.1:10250", "host:port to serve on (port 0 picks a free one)")
	flag.StringVar(&opts.certFile, "tls-cert-file", "", "serving certificate (PEM)")
	flag.StringVar(&opts.keyFile, "tls-private-key-file", "", "serving key (PEM)")
	flag.StringVar(&opts.clientCAFile, "client-ca-file", "", "CA that signs the certificates clients must present")
	flag.StringVar(&opts.backend, "backend", "", "base URL of the Python kubelet, e.g. http://127.0.0.1:10255")
	flag.Var(&opts.access.users, "allowed-users", "comma-separated client certificate CNs that may call (with no users or groups, any the CA signed)")
	flag.Var(&opts.access.groups, "allowed-groups", "comma-separated client certificate Os (groups) that may call")
	flag.Parse()
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet-streams:", err)
		os.Exit(1)
	}
}

func run(opts options) error {
	if opts.certFile == "" || opts.keyFile == "" || opts.clientCAFile == "" || opts.backend == "" {
		return errors.New("--tls-cert-file, --tls-private-key-file, --client-ca-file and --backend are required")
	}
	backend, err := url.Parse(opts.backend)
	if err != nil || backend.Scheme == "" || backend.Host == "" {
		return fmt.Errorf("--backend %q is not an absolute URL", opts.backend)
	}
	config, err := loadTLS(opts.certFile, opts.keyFile, opts.clientCAFile)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	fmt.Printf("serving on %s\n", listener.Addr())
	server := &http.Server{
		Handler:           opts.access.guard(newHandler(backend, http.DefaultClient)),
		ReadHeaderTimeout: 30 * time.Second,
	}
	return server.Serve(tls.NewListener(listener, config))
}

// loadTLS reads the serving pair and the client CA from files.
func loadTLS(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("client CA: no certificate in %s", clientCAFile)
	}
	return serverTLS(pair, pool), nil
}

// serverTLS refuses any client without a certificate from `clientCAs`: whoever may reach this
// port may run commands in every pod, so only the API server (its kubelet-client certificate)
// gets in. HTTP/1.1 only, because both SPDY and WebSocket upgrade an HTTP/1.1 connection.
func serverTLS(pair tls.Certificate, clientCAs *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
	}
}
