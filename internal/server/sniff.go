package server

import (
	"log/slog"
	"net"
	"sync"
)

// tlsRecordHandshake is the first byte of a TLS connection (a handshake
// record): what a client that speaks TLS sends first.
const tlsRecordHandshake = 0x16

// SniffTLS wraps the plain HTTP listener: the first time a connection
// starts with a TLS handshake (the C++ Server SDK speaks TLS whatever the
// URL's scheme, so a ws:// URL given to it lands here), Hoist logs a
// warning naming the TLS listener (tlsAddr, "" when it is off). The
// connection itself is served as before (and fails as HTTP).
func SniffTLS(ln net.Listener, tlsAddr string, log *slog.Logger) net.Listener {
	return &sniffListener{Listener: ln, tlsAddr: tlsAddr, log: log}
}

type sniffListener struct {
	net.Listener
	tlsAddr string
	log     *slog.Logger
	once    sync.Once
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, l: l}, nil
}

func (l *sniffListener) warn(remote net.Addr) {
	l.once.Do(func() {
		hint := "no TLS listener is on: start Hoist with --tls-addr, or have the client speak plain HTTP/WebSocket"
		if l.tlsAddr != "" {
			hint = "use the TLS listener at wss://" + l.tlsAddr + "/sdk (https://" + l.tlsAddr + " for the API); " +
				"game servers on the C++ Server SDK always speak TLS, whatever the URL's scheme"
		}
		l.log.Warn("TLS on the plain port: a client sent a TLS handshake to the plain HTTP listener (logged once)",
			"addr", l.Addr().String(), "remote", remote.String(), "hint", hint)
	})
}

// sniffConn looks at the first byte read from a connection.
type sniffConn struct {
	net.Conn
	l       *sniffListener
	checked bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.checked && n > 0 {
		c.checked = true
		if p[0] == tlsRecordHandshake {
			c.l.warn(c.RemoteAddr())
		}
	}
	return n, err
}
