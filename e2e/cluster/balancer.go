package cluster

import (
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

// Balancer starts a load balancer in front of the cluster, as a studio
// puts one in front of its replicas, and returns its URL
// (http://127.0.0.1:port): an HTTP reverse proxy on a loopback port that
// sends each request to the next replica that is up (round robin, per
// request, not per connection, so that a client keeping one connection
// alive still spreads its calls), WebSocket upgrades included. It keeps
// the request's Host header, which SigV4 signs. It is closed when the
// test ends.
func (c *Cluster) Balancer() string {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			up := c.Up()
			if len(up) == 0 {
				return // no replica: the transport's error answers 502
			}
			target, err := url.Parse(up[int(c.next.Add(1)-1)%len(up)].URL())
			if err != nil {
				return
			}
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
			DisableCompression: true},
		FlushInterval: -1, // the live event stream's events as they come
	}
	// Full duplex: a replica may answer before the proxy has finished
	// forwarding the request's body (it has read it all; the proxy's copy
	// has not seen its end yet). Without it Go's HTTP/1 server drains the
	// rest of the inbound body when the answer starts, the copy to the
	// replica fails and the proxy drops that connection in the middle of
	// the answer (golang/go#40747): a truncated response, seen once under
	// load as an SDK's SerializationError.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.t.Errorf("balancer: %v", err)
		}
	}()
	c.t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}
