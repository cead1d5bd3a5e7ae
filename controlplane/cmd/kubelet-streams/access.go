package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// names is a comma-separated flag value.
type names []string

func (n *names) String() string { return strings.Join(*n, ",") }

func (n *names) Set(value string) error {
	for _, name := range strings.Split(value, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*n = append(*n, name)
		}
	}
	return nil
}

// access is who may call, by the subject of their client certificate. The CA alone is not
// enough: it also signs the node's, the scheduler's and every other component's certificate,
// and none of them may run commands in pods. The real kubelet asks the API server (a
// SubjectAccessReview for nodes/proxy); a fixed list does for one cluster's known identities.
type access struct {
	users  names // certificate CNs
	groups names // certificate Os
}

// guard passes on requests from an allowed user or group; with no list, every client the TLS
// layer let in (one with a certificate from the CA) is allowed.
func (a access) guard(next http.Handler) http.Handler {
	if len(a.users) == 0 && len(a.groups) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subject := req.TLS.PeerCertificates[0].Subject
		inGroup := slices.ContainsFunc(subject.Organization, func(group string) bool {
			return slices.Contains(a.groups, group)
		})
		if !slices.Contains(a.users, subject.CommonName) && !inGroup {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s)", subject.CommonName), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	})
}
