package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	clientexec "k8s.io/client-go/util/exec"
)

const podUID = "uid-1"

// apiServer is the identity the API server's kubelet-client certificate carries.
var apiServer = pkix.Name{CommonName: "kube-apiserver-kubelet-client"}

// fakeBackend plays the Python kubelet: pod default/web has one running container, "main",
// whose commands run on the host (no prefix) with an environment of its own.
func fakeBackend(podIP string) http.Handler {
	mux := http.NewServeMux()
	known := func(w http.ResponseWriter, req *http.Request) bool {
		uid := req.URL.Query().Get("uid")
		if req.PathValue("namespace") != "default" || req.PathValue("pod") != "web" || (uid != "" && uid != podUID) {
			http.Error(w, "pod not found", http.StatusNotFound)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /streams/exec-target/{namespace}/{pod}/{container}", func(w http.ResponseWriter, req *http.Request) {
		if !known(w, req) {
			return
		}
		if name := req.PathValue("container"); name != "main" {
			http.Error(w, `container "`+name+`" is not running`, http.StatusNotFound)
			return
		}
		env := map[string]string{"PATH": os.Getenv("PATH"), "GREETING": "hello from the pod"}
		_ = json.NewEncoder(w).Encode(execTarget{Argv: nil, Env: env})
	})
	mux.HandleFunc("GET /streams/pod-ip/{namespace}/{pod}", func(w http.ResponseWriter, req *http.Request) {
		if known(w, req) {
			_ = json.NewEncoder(w).Encode(map[string]string{"ip": podIP})
		}
	})
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.WriteString(w, "a log line of "+req.PathValue("container")+"\n")
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.WriteString(w, "the backend's answer to "+req.URL.Path)
	})
	return mux
}

// shim is the server under test with what a client needs to reach it.
type shim struct {
	server *httptest.Server
	ca     *authority
	client issued
}

// startShim serves the handler over TLS that requires client certificates from its own CA.
func startShim(t *testing.T, podIP string) *shim {
	t.Helper()
	backend := httptest.NewServer(fakeBackend(podIP))
	t.Cleanup(backend.Close)
	backendURL, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	ca := newAuthority(t, "cluster-ca")
	allowed := access{users: names{apiServer.CommonName}, groups: names{"system:masters"}}
	server := httptest.NewUnstartedServer(allowed.guard(newHandler(backendURL, backend.Client())))
	server.TLS = serverTLS(ca.issue(t, pkix.Name{CommonName: "kubelet"}, true).pair, ca.pool())
	server.StartTLS()
	t.Cleanup(server.Close)
	return &shim{server: server, ca: ca, client: ca.issue(t, apiServer, false)}
}

func (s *shim) config() *rest.Config {
	return &rest.Config{
		Host: s.server.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: s.ca.pem, CertData: s.client.certPEM, KeyData: s.client.keyPEM,
		},
	}
}

// execURL is the path the API server builds, with the flags kubectl sets.
func (s *shim) execURL(path string, command []string, stdin, tty bool) *url.URL {
	query := url.Values{"command": command, "output": {"1"}}
	if stdin {
		query.Set("input", "1")
	}
	if tty {
		query.Set("tty", "1")
	} else {
		query.Set("error", "1")
	}
	u, _ := url.Parse(s.server.URL + path)
	u.RawQuery = query.Encode()
	return u
}

// executors are the two protocols that reach a kubelet: SPDY (from the API server, which
// translates kubectl's v5 WebSocket) and v4 WebSocket (the Python client's, passed through).
var executors = map[string]func(*rest.Config, *url.URL) (remotecommand.Executor, error){
	"spdy": func(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewSPDYExecutor(config, http.MethodPost, u)
	},
	"websocket": func(config *rest.Config, u *url.URL) (remotecommand.Executor, error) {
		return remotecommand.NewWebSocketExecutorForProtocols(config, http.MethodGet, u.String(), "v4.channel.k8s.io")
	},
}

// exitCode is the exit code a client reports for a stream's error (0 for none, -1 for another error).
func exitCode(err error) int {
	var exited clientexec.CodeExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exited):
		return exited.Code
	default:
		return -1
	}
}

func TestExecRunsTheCommandWithTheClientsStreams(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	cases := []struct {
		name     string
		command  []string
		stdin    string
		stdout   string
		stderr   string
		exitCode int
	}{
		{name: "stdout", command: []string{"echo", "hi"}, stdout: "hi\n"},
		{name: "stderr", command: []string{"sh", "-c", "echo oops >&2"}, stderr: "oops\n"},
		{name: "exit code", command: []string{"sh", "-c", "echo before; exit 3"}, stdout: "before\n", exitCode: 3},
		{name: "killed by a signal", command: []string{"sh", "-c", "kill -KILL $$"}, exitCode: 137},
		{name: "stdin", command: []string{"sh", "-c", "read line; echo got $line"}, stdin: "ping\n", stdout: "got ping\n"},
		// The container's environment and nothing of the server's (HOME is set for the tests).
		{name: "environment", command: []string{"sh", "-c", `echo "$GREETING|$HOME"`}, stdout: "hello from the pod|\n"},
	}
	for protocol, newExecutor := range executors {
		for _, tc := range cases {
			t.Run(protocol+"/"+tc.name, func(t *testing.T) {
				path := "/exec/default/web/main"
				if tc.name == "stdout" {
					path = "/exec/default/web/" + podUID + "/main" // the form with the pod UID
				}
				executor, err := newExecutor(s.config(), s.execURL(path, tc.command, tc.stdin != "", false))
				if err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				options := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
				if tc.stdin != "" {
					options.Stdin = strings.NewReader(tc.stdin)
				}
				err = executor.StreamWithContext(t.Context(), options)
				if got := exitCode(err); got != tc.exitCode {
					t.Fatalf("exit code %d (%v), want %d", got, err, tc.exitCode)
				}
				if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
					t.Fatalf("stdout %q stderr %q, want %q and %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
				}
			})
		}
	}
}

// sizeOnce reports one terminal size, then that the client's terminal is gone.
type sizeOnce struct{ sent bool }

func (q *sizeOnce) Next() *remotecommand.TerminalSize {
	if q.sent {
		return nil
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 100, Height: 40}
}

func TestExecWithATerminalIsResizedByTheClient(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	// The command waits for the size the client sends, then names its terminal.
	script := `while [ "$(stty size)" != "40 100" ]; do :; done; echo "size ok"; tty`
	for protocol, newExecutor := range executors {
		t.Run(protocol, func(t *testing.T) {
			executor, err := newExecutor(s.config(), s.execURL("/exec/default/web/main", []string{"sh", "-c", script}, false, true))
			if err != nil {
				t.Fatal(err)
			}
			var stdout bytes.Buffer
			err = executor.StreamWithContext(t.Context(), remotecommand.StreamOptions{
				Stdout: &stdout, Tty: true, TerminalSizeQueue: &sizeOnce{},
			})
			if err != nil {
				t.Fatal(err)
			}
			if out := stdout.String(); !strings.Contains(out, "size ok\r\n/dev/pts/") {
				t.Fatalf("terminal output %q", out)
			}
		})
	}
}

func TestExecIntoAContainerThatIsNotRunningFails(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	for protocol, newExecutor := range executors {
		t.Run(protocol, func(t *testing.T) {
			for path, message := range map[string]string{
				"/exec/default/web/ghost":      `container "ghost" is not running`,
				"/exec/default/web/uid-2/main": "pod not found",
				"/exec/default/other-pod/main": "pod not found",
			} {
				executor, err := newExecutor(s.config(), s.execURL(path, []string{"true"}, false, false))
				if err != nil {
					t.Fatal(err)
				}
				err = executor.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: io.Discard})
				if err == nil || (protocol == "spdy" && !strings.Contains(err.Error(), message)) {
					t.Fatalf("%s: error %v, want one saying %q", path, err, message)
				}
			}
		})
	}
}

func TestOnlyClientsWithACertificateFromTheCAGetIn(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	stranger := newAuthority(t, "another-ca").issue(t, apiServer, false)
	for name, certificates := range map[string][]tls.Certificate{
		"no certificate":            nil,
		"certificate of another CA": {stranger.pair},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := s.get(t, certificates, logPath)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("answered %s", resp.Status)
			}
		})
	}
}

func TestOnlyTheAllowedUsersAndGroupsMayCall(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	for name, tc := range map[string]struct {
		subject pkix.Name
		status  int
	}{
		"the API server":             {apiServer, http.StatusOK},
		"an administrator":           {pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, http.StatusOK},
		"another component's client": {pkix.Name{CommonName: "system:kube-scheduler"}, http.StatusForbidden},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := s.get(t, []tls.Certificate{s.ca.issue(t, tc.subject, false).pair}, logPath)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("answered %s, want %d", resp.Status, tc.status)
			}
		})
	}
}

// logPath is a container's log, as the API server asks for it (a path passed to the backend).
const logPath = "/containerLogs/default/web/main?follow=true"

// get asks for path with these client certificates.
func (s *shim) get(t *testing.T, certificates []tls.Certificate, path string) (*http.Response, error) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: s.ca.pool(), Certificates: certificates,
	}}}
	t.Cleanup(client.CloseIdleConnections)
	return client.Get(s.server.URL + path)
}

func TestOnlyLogsAndHealthAreTheBackendsAnswers(t *testing.T) {
	s := startShim(t, "127.0.0.1")
	for path, want := range map[string]struct {
		status int
		body   string
	}{
		logPath:    {http.StatusOK, "a log line of main\n"},
		"/healthz": {http.StatusOK, "ok"},
		// The backend's answers to this program: a container's environment, and a pod's IP.
		"/streams/exec-target/default/web/main":                  {http.StatusNotFound, "404 page not found\n"},
		"/streams/pod-ip/default/web":                            {http.StatusNotFound, "404 page not found\n"},
		"/containerLogs/../streams/exec-target/default/web/main": {http.StatusNotFound, "404 page not found\n"},
		// The rest of a real kubelet's API, which the backend does not serve.
		"/pods":          {http.StatusNotFound, "404 page not found\n"},
		"/stats/summary": {http.StatusNotFound, "404 page not found\n"},
	} {
		t.Run(path, func(t *testing.T) {
			resp, err := s.get(t, []tls.Certificate{s.client.pair}, path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != want.status || string(body) != want.body {
				t.Fatalf("answered %s %q, want %d %q", resp.Status, body, want.status, want.body)
			}
		})
	}
}

// echoServer answers each connection with what it read, once the client has finished writing.
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				received, _ := io.ReadAll(conn)
				_, _ = conn.Write(received)
			}()
		}
	}()
	return listener
}

func TestPortForwardReachesThePodsPort(t *testing.T) {
	pod := echoServer(t)
	s := startShim(t, "127.0.0.1")
	podPort := strconv.Itoa(pod.Addr().(*net.TCPAddr).Port)
	transport, upgrader, err := spdy.RoundTripperFor(s.config())
	if err != nil {
		t.Fatal(err)
	}
	forwardURL, _ := url.Parse(s.server.URL + "/portForward/default/web/" + podUID)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, forwardURL)
	stop, ready := make(chan struct{}), make(chan struct{})
	forwarder, err := portforward.New(dialer, []string{"0:" + podPort}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	forwarded := make(chan error, 1)
	go func() { forwarded <- forwarder.ForwardPorts() }()
	<-ready
	ports, err := forwarder.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(conn)
	if err != nil || string(answer) != "ping" {
		t.Fatalf("read %q (%v) through the forwarded port", answer, err)
	}
	close(stop)
	if err := <-forwarded; err != nil {
		t.Fatal(err)
	}
}
