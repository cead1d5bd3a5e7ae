package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxAnswer bounds what is read from the backend: an environment, not a log.
const maxAnswer = 4 << 20

// execTarget is how to run a command in a container: prefix the command with Argv (empty runs
// it on the host, as the tests do) and give it Env and nothing else of this process's.
type execTarget struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env"`
}

// backend asks the Python kubelet about its pods.
type backend struct {
	base   *url.URL
	client *http.Client
}

// backendStatus is an answer other than 200, with the backend's message.
type backendStatus struct {
	code    int
	message string
}

func (e *backendStatus) Error() string {
	return fmt.Sprintf("kubelet answered %d: %s", e.code, e.message)
}

// execTarget asks GET /streams/exec-target/{namespace}/{pod}/{container}.
func (b *backend) execTarget(ctx context.Context, pod podRef, container string) (execTarget, error) {
	var target execTarget
	err := b.get(ctx, pod.uid, &target, "exec-target", pod.namespace, pod.name, container)
	return target, err
}

// podIP asks GET /streams/pod-ip/{namespace}/{pod}.
func (b *backend) podIP(ctx context.Context, pod podRef) (string, error) {
	var answer struct {
		IP string `json:"ip"`
	}
	if err := b.get(ctx, pod.uid, &answer, "pod-ip", pod.namespace, pod.name); err != nil {
		return "", err
	}
	if answer.IP == "" {
		return "", fmt.Errorf("kubelet gave no IP for pod %s/%s", pod.namespace, pod.name)
	}
	return answer.IP, nil
}

// get decodes the JSON answer of /streams/<segments...>. The UID, when the request named one,
// goes along so the backend refuses a pod that was deleted and created again under the name.
func (b *backend) get(ctx context.Context, uid string, into any, segments ...string) error {
	escaped := make([]string, len(segments))
	for i, segment := range segments {
		escaped[i] = url.PathEscape(segment)
	}
	address := strings.TrimSuffix(b.base.String(), "/") + "/streams/" + strings.Join(escaped, "/")
	if uid != "" {
		address += "?" + url.Values{"uid": {uid}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, address, nil)
	if err != nil {
		return err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("asking the kubelet: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("reading the kubelet's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return &backendStatus{code: resp.StatusCode, message: strings.TrimSpace(string(body))}
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("decoding the kubelet's answer: %w", err)
	}
	return nil
}
