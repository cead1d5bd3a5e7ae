package main

import (
	"errors"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

const (
	// commandParam is the query parameter that carries the command, one per argument
	// (k8s.io/api/core/v1 ExecCommandParam; not imported for one constant).
	commandParam = "command"
	// idleTimeout is the kubelet's default streamingConnectionIdleTimeout.
	idleTimeout = 4 * time.Hour
)

// streams serves the kubelet's streaming paths and proxies logs and health to the backend.
type streams struct {
	backend *backend
	proxy   http.Handler
}

// newHandler routes the paths the API server builds for exec and port-forward, with and
// without the pod UID, as the real kubelet accepts both, and passes on to the backend only the
// rest of the kubelet API it serves: container logs and health. Every other path is not found
// here, whatever the backend has: its /streams/ answers this program alone, and an exec target
// carries a container's environment, Secrets included. The API server's nodes/proxy passes any
// path to this port, so whoever may use it would otherwise read them.
func newHandler(backendURL *url.URL, client *http.Client) http.Handler {
	s := &streams{
		backend: &backend{base: backendURL, client: client},
		proxy: &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(backendURL) },
			// `kubectl logs -f` must see each line when it is written, not when a buffer fills.
			FlushInterval: -1,
		},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", s.exec)
	mux.HandleFunc("/exec/{namespace}/{pod}/{uid}/{container}", s.exec)
	mux.HandleFunc("/portForward/{namespace}/{pod}", s.portForward)
	mux.HandleFunc("/portForward/{namespace}/{pod}/{uid}", s.portForward)
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", s.proxy)
	mux.Handle("GET /healthz", s.proxy)
	mux.Handle("/", http.NotFoundHandler())
	return mux
}

// podRef is the pod (and, in the UID forms, the incarnation of it) a request names.
type podRef struct {
	namespace, name, uid string
}

func refOf(req *http.Request) podRef {
	return podRef{req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("uid")}
}

// upgradeMethod accepts the two methods that start a stream: GET for WebSocket, POST for SPDY.
func upgradeMethod(w http.ResponseWriter, req *http.Request) bool {
	if req.Method == http.MethodGet || req.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", "GET, POST")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func (s *streams) exec(w http.ResponseWriter, req *http.Request) {
	if !upgradeMethod(w, req) {
		return
	}
	pod, container := refOf(req), req.PathValue("container")
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	command := req.URL.Query()[commandParam]
	if len(command) == 0 {
		http.Error(w, "no command given", http.StatusBadRequest)
		return
	}
	// Asked before the upgrade, so a container that is not running is a plain HTTP error
	// the client shows as it is, not a stream that opens and fails.
	target, err := s.backend.execTarget(req.Context(), pod, container)
	if err != nil {
		writeBackendError(w, err)
		return
	}
	executor := &processExecutor{target: target, opts: *opts}
	remotecommand.ServeExec(w, req, executor, pod.name, pod.uid, container, command, opts,
		idleTimeout, remotecommand.DefaultStreamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (s *streams) portForward(w http.ResponseWriter, req *http.Request) {
	if !upgradeMethod(w, req) {
		return
	}
	pod := refOf(req)
	opts, err := portforward.NewV4Options(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ip, err := s.backend.podIP(req.Context(), pod)
	if err != nil {
		writeBackendError(w, err)
		return
	}
	portforward.ServePortForward(w, req, podDialer{ip: ip}, pod.name, pod.uid, opts,
		idleTimeout, remotecommand.DefaultStreamCreationTimeout, portforward.SupportedProtocols)
}

// writeBackendError passes the backend's own answer on (404 for a pod or container that is
// not there); a backend that cannot be reached is a bad gateway.
func writeBackendError(w http.ResponseWriter, err error) {
	var status *backendStatus
	if errors.As(err, &status) {
		http.Error(w, status.message, status.code)
		return
	}
	http.Error(w, err.Error(), http.StatusBadGateway)
}
