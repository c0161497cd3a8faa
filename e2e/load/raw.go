package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// rawConn is one keep-alive HTTP/1.1 connection used by one worker: it
// writes a request in one write and reads the answer, whose length must be
// given by Content-Length (Hoist and the ceiling both send it), in the
// worker's goroutine. It reconnects after an error or a "Connection:
// close".
type rawConn struct {
	addr, host string
	nc         net.Conn
	br         *bufio.Reader
	req        []byte
}

var errNoLength = errors.New("answer without Content-Length (chunked answers are not supported)")

func (c *rawConn) close() {
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
}

// roundTrip sends a signed POST / and reads the answer's body into resp.
// It returns the status and the X-Amzn-ErrorType header.
func (c *rawConn) roundTrip(target string, h headers, body []byte, resp *bytes.Buffer) (int, string, error) {
	if c.nc == nil {
		nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return 0, "", err
		}
		c.nc, c.br = nc, bufio.NewReaderSize(nc, 8<<10)
	}
	b := append(c.req[:0], "POST / HTTP/1.1\r\nHost: "...)
	b = append(b, c.host...)
	b = append(b, "\r\nContent-Type: "+jsonContentType+"\r\nX-Amz-Target: "...)
	b = append(b, target...)
	b = append(b, "\r\nX-Amz-Date: "...)
	b = append(b, h.amzDate...)
	b = append(b, "\r\nAuthorization: "...)
	b = append(b, h.authorization...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	c.req = b
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.close()
		return 0, "", err
	}
	status, errType, err := c.readAnswer(resp)
	if err != nil {
		c.close()
	}
	return status, errType, err
}

func (c *rawConn) readAnswer(resp *bytes.Buffer) (status int, errType string, err error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, "", err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, "", fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, "", fmt.Errorf("bad status line %q", line)
	}
	length, closeAfter := -1, false
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, "", err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, "", fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, "", fmt.Errorf("bad Content-Length %q", value)
			}
		case asciiEqualFold(name, "X-Amzn-Errortype"):
			errType = string(value)
		case asciiEqualFold(name, "Connection"):
			closeAfter = asciiEqualFold(value, "close")
		case asciiEqualFold(name, "Transfer-Encoding"):
			return 0, "", errNoLength
		}
	}
	if length < 0 {
		return 0, "", errNoLength
	}
	if _, err := io.CopyN(resp, c.br, int64(length)); err != nil {
		return 0, "", err
	}
	if closeAfter {
		c.close()
	}
	return status, errType, nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
