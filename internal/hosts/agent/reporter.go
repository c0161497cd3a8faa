package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/hoistgg/hoist/internal/hosts/hostproto"
	"github.com/hoistgg/hoist/internal/wsrpc"
)

// report is a message for Hoist about an instance.
type report struct {
	action string
	msg    any
	// output is a spooled copy of an ended process's output, uploaded
	// before the message.
	output string
}

// maxQueued bounds the reports kept while Hoist cannot be reached; past
// it the oldest are dropped (Hoist's heartbeat answers still converge
// what runs here).
const maxQueued = 10000

// reporter sends reports to Hoist one at a time, in order, over whatever
// connection is current, keeping them across reconnects.
type reporter struct {
	a     *Agent
	wakes chan struct{}

	mu sync.Mutex
	q  []report
}

func newReporter(a *Agent) *reporter {
	return &reporter{a: a, wakes: make(chan struct{}, 1)}
}

// wake wakes the reporter (a report was queued, a connection was made).
func (r *reporter) wake() {
	select {
	case r.wakes <- struct{}{}:
	default:
	}
}

// queue adds a report.
func (r *reporter) queue(rep report) {
	r.mu.Lock()
	if len(r.q) >= maxQueued {
		old := r.q[0]
		r.q = r.q[1:]
		if old.output != "" {
			_ = os.Remove(old.output)
		}
		r.a.log.Warn("agent: too many reports waiting for Hoist: the oldest is dropped", "action", old.action)
	}
	r.q = append(r.q, rep)
	r.mu.Unlock()
	r.wake()
}

// next returns the oldest report (false when none is waiting).
func (r *reporter) next() (report, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.q) == 0 {
		return report{}, false
	}
	return r.q[0], true
}

// done drops the oldest report.
func (r *reporter) done() {
	r.mu.Lock()
	if len(r.q) > 0 {
		if o := r.q[0].output; o != "" {
			_ = os.Remove(o)
		}
		r.q = r.q[1:]
	}
	r.mu.Unlock()
}

// retryAfter is how long a report waits after its connection failed.
const retryAfter = 200 * time.Millisecond

// run sends reports until ctx ends.
func (r *reporter) run(ctx context.Context) {
	for {
		rep, ok := r.next()
		c := r.a.current()
		if !ok || c == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.wakes:
			}
			continue
		}
		err := r.send(ctx, c, rep)
		r.a.log.Debug("agent: report", "action", rep.action, "err", err)
		var we *wsrpc.Error
		switch {
		case err == nil:
			r.done()
		case errors.As(err, &we):
			r.a.log.Info("agent: Hoist refused a report", "action", rep.action, "err", err)
			r.done()
		default: // the connection failed: the report waits for the next one
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryAfter):
			}
		}
	}
}

// send uploads a report's output, then sends it.
func (r *reporter) send(ctx context.Context, c *conn, rep report) error {
	msg := rep.msg
	if pe, ok := msg.(hostproto.ProcessExited); ok && rep.output != "" {
		err := r.a.uploadOutput(ctx, pe.InstanceId, pe.ProcessId, rep.output)
		var he *httpStatusError
		if err != nil && !errors.As(err, &he) {
			return err // Hoist unreachable: try again
		}
		pe.OutputUploaded = err == nil
		msg = pe
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.peer.Call(cctx, rep.action, msg, nil)
}

// httpStatusError is Hoist's refusal of an upload.
type httpStatusError struct{ status string }

func (e *httpStatusError) Error() string { return "Hoist answered " + e.status }

// uploadOutput PUTs the spooled end of a process's output.
func (a *Agent) uploadOutput(ctx context.Context, instanceID, processID, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &httpStatusError{"nothing: the spooled output is gone"}
	}
	defer f.Close()
	q := url.Values{"instance": {instanceID}, "process": {processID}}
	return a.put(ctx, hostproto.PathOutput+"?"+q.Encode(), f)
}

// put PUTs a file to Hoist with the host's credential.
func (a *Agent) put(ctx context.Context, path string, f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, a.url(path), f)
	if err != nil {
		return err
	}
	req.ContentLength = st.Size()
	cr := a.creds()
	hostproto.SetCredential(req.Header, cr.HostID, cr.HostSecret)
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &httpStatusError{fmt.Sprint(resp.Status)}
	}
	return nil
}
