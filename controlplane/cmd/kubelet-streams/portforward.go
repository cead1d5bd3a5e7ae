package main

import (
	"context"
	"io"
	"net"
	"strconv"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// podDialer forwards to the pod's IP from the host: pod IPs sit on the node's bridge, which the
// host routes to. (A real runtime dials localhost inside the pod's network namespace, so it
// also reaches servers bound to the pod's loopback; this does not.)
type podDialer struct {
	ip string
}

var _ portforward.PortForwarder = podDialer{}

// PortForward copies one connection both ways until the pod's side is done. The client's end of
// input is passed on as a half-close, so a server that answers after reading everything works.
func (d podDialer) PortForward(ctx context.Context, _, _ string, port int32, stream io.ReadWriteCloser) error {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(d.ip, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer conn.Close()
	go func() {
		_, _ = io.Copy(conn, stream)
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
	}()
	_, err = io.Copy(stream, conn)
	return err
}
