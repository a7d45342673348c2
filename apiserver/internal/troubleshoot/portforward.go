package troubleshoot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// fetchThroughPortForward GETs path from port of a Pod over a port-forward
// through the Kubernetes API server (pods/portforward, as kubectl
// port-forward does): the API server hands the stream to the Pod's
// kubelet, which connects to the port inside the Pod. It needs no network
// route from ops-apiserver to the Pod, and reads at most max bytes of the
// body.
func (s *Service) fetchThroughPortForward(ctx context.Context, p *corev1.Pod, port int32, path string, max int64) ([]byte, error) {
	u := s.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(s.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("building the SPDY transport: %w", err)
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s/%s:%d: %w", p.Namespace, p.Name, port, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		return nil, fmt.Errorf("creating the error stream: %w", err)
	}
	_ = errStream.Close()
	remoteErr := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(errStream, 4096))
		remoteErr <- string(b)
	}()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		return nil, fmt.Errorf("creating the data stream: %w", err)
	}
	defer data.Reset()
	if _, err := fmt.Fprintf(data, "GET %s HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n", path); err != nil {
		return nil, fmt.Errorf("writing the request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(data), nil)
	if err != nil {
		select {
		case msg := <-remoteErr:
			if msg != "" {
				return nil, fmt.Errorf("port-forward to %s/%s:%d: %s", p.Namespace, p.Name, port, msg)
			}
		default:
		}
		return nil, fmt.Errorf("reading the response of %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return nil, fmt.Errorf("reading the body of %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, nil
}
