package sdkconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hoistgg/hoist/internal/hosting"
)

// procConn is one WebSocket of a server process.
type procConn struct {
	s   *Server
	id  hosting.Conn
	api hosting.ProcessAPI
	// backfill serves StartMatchBackfill and StopMatchBackfill (nil: not
	// supported).
	backfill hosting.Backfiller
	log      *slog.Logger

	// ctx ends when the socket is done; cancel closes it without a close
	// frame (coder/websocket closes a Conn whose Read or Write context ends).
	ctx    context.Context
	cancel context.CancelFunc
	send   chan outFrame
	ws     *websocket.Conn // set once (under closeMu), before the writer starts

	since time.Time
	// ending is set once TerminateServerProcess succeeded: any close after
	// it is a normal exit.
	ending atomic.Bool
	// closeCode is the close code the service itself closed with (0: the
	// process closed, or the socket broke). closeMu guards it and ws.
	closeMu     sync.Mutex
	closeCode   websocket.StatusCode
	closeReason string
	// badFrames counts frames that could not be answered (only the first
	// is logged above debug level); throttledFrames those answered 429.
	badFrames       int
	throttledFrames int
	// frames bounds the requests the socket is served (MessageBurst,
	// MessageRate); read by the reader only.
	frames bucket
	// forgotten is set (under Server.mu) once forget unregistered it.
	forgotten bool

	// orderMu orders frames: while a request is being served, messages
	// from SendToProcess wait in held and follow its reply, so a process
	// never hears of something its request caused (a game session placed
	// on it right after its ProcessReady committed) before the reply (the
	// SDKs ignore a CreateGameSession that arrives before ProcessReady's
	// reply). After a successful ActivateServerProcess reply awaitReady
	// holds them until the process's next request or ReadyGrace (see
	// Config.ReadyGrace).
	orderMu    sync.Mutex
	serving    bool
	awaitReady bool
	readyTimer *time.Timer
	held       []outFrame
}

// outFrame is a frame for the writer; done, when set, gets the result of
// writing it.
type outFrame struct {
	data []byte
	done chan error
}

func newProcConn(s *Server, id hosting.Conn) *procConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &procConn{s: s, id: id, api: s.cfg.API, backfill: s.cfg.Backfiller, ctx: ctx, cancel: cancel,
		send: make(chan outFrame, s.cfg.SendQueue), since: s.cfg.Now(),
		log: s.log.With("process", id.ProcessID, "conn", id.ConnID)}
}

// serve runs the socket until it closes, then unregisters it and reports
// the close to the ProcessAPI.
func (pc *procConn) serve(ws *websocket.Conn) {
	pc.closeMu.Lock()
	pc.ws = ws
	code, reason := pc.closeCode, pc.closeReason
	pc.closeMu.Unlock()
	if code != 0 { // Shutdown ran during the handshake
		go ws.Close(code, reason)
	}
	pc.log.Info("sdk: process connected", "fleet", pc.id.FleetID, "compute", pc.id.ComputeName,
		"sdkVersion", pc.id.SDKVersion, "sdkLanguage", pc.id.SDKLanguage, "replica", pc.s.cfg.ReplicaID)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		pc.writeLoop()
	}()
	err := pc.readLoop()
	pc.cancel()
	<-writerDone
	ws.CloseNow()
	pc.s.forget(pc)
	code, normal := pc.closeOutcome(err)
	pc.log.Info("sdk: process disconnected", "code", int(code), "normal", normal,
		"connectedFor", pc.s.cfg.Now().Sub(pc.since).Round(time.Millisecond))
	pc.s.disconnected(pc.id, normal)
}

// closeOutcome returns the socket's close code (1006 when it broke without
// a close frame) and whether the close was normal for the ProcessAPI.
func (pc *procConn) closeOutcome(err error) (websocket.StatusCode, bool) {
	pc.closeMu.Lock()
	code := pc.closeCode
	pc.closeMu.Unlock()
	byService := code != 0
	if !byService {
		code = websocket.CloseStatus(err)
	}
	if code < 0 {
		code = websocket.StatusAbnormalClosure
	}
	normal := pc.ending.Load() ||
		(!byService && (code == websocket.StatusNormalClosure || code == websocket.StatusGoingAway))
	return code, normal
}

// closeWith closes the socket with a close frame, from the service's side.
func (pc *procConn) closeWith(code websocket.StatusCode, reason string) {
	pc.closeMu.Lock()
	if pc.closeCode != 0 {
		pc.closeMu.Unlock()
		return
	}
	pc.closeCode, pc.closeReason = code, reason
	ws := pc.ws
	pc.closeMu.Unlock()
	if ws != nil { // else serve closes it once upgraded
		go ws.Close(code, reason) // waits for the peer's close frame
	}
}

// readLoop reads and answers frames until the socket fails.
func (pc *procConn) readLoop() error {
	for {
		typ, data, err := pc.ws.Read(pc.ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			pc.log.Debug("sdk: binary frame ignored", "bytes", len(data))
			continue
		}
		if pc.s.cfg.MessageRate > 0 && !pc.frames.take(pc.s.cfg.Now(), float64(pc.s.cfg.MessageBurst), pc.s.messageEvery()) {
			if err := pc.throttle(data); err != nil {
				return err
			}
			continue
		}
		pc.setServing()
		if err := pc.answer(pc.handle(data)); err != nil {
			return err
		}
	}
}

// setServing notes that a request is being served. A request after the
// ActivateServerProcess reply shows the process has handled that reply:
// the messages held since follow this request's reply.
func (pc *procConn) setServing() {
	pc.orderMu.Lock()
	pc.serving, pc.awaitReady = true, false
	pc.orderMu.Unlock()
}

// answer queues a reply (if any), then the messages held back while the
// request was served, unless the reply is the one to a successful
// ActivateServerProcess: they then wait for the process's next request
// (or ReadyGrace).
func (pc *procConn) answer(reply *Reply) error {
	pc.orderMu.Lock()
	defer pc.orderMu.Unlock()
	pc.serving = false
	if reply != nil && reply.Action == "ActivateServerProcess" && reply.Status == 200 {
		pc.awaitReady = true
		if pc.readyTimer != nil {
			pc.readyTimer.Stop()
		}
		pc.readyTimer = time.AfterFunc(pc.s.cfg.ReadyGrace, pc.readyGraceOver)
	}
	var held []outFrame
	if !pc.awaitReady {
		held, pc.held = pc.held, nil
	}
	if reply != nil {
		frame, err := reply.Encode()
		if err != nil {
			pc.log.Error("sdk: encoding a reply failed", "action", reply.Action, "err", err)
			frame, _ = (&Reply{Action: reply.Action, RequestID: reply.RequestID, Status: 500,
				Message: "internal error"}).Encode()
		}
		if err := pc.enqueue(pc.ctx, outFrame{data: frame}); err != nil {
			return err
		}
	}
	for _, f := range held {
		if err := pc.enqueue(pc.ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// readyGraceOver sends the messages held since the ActivateServerProcess
// reply when the process has sent no request within ReadyGrace.
func (pc *procConn) readyGraceOver() {
	pc.orderMu.Lock()
	defer pc.orderMu.Unlock()
	if !pc.awaitReady || pc.serving {
		return // a request came: its reply releases them
	}
	pc.awaitReady = false
	held := pc.held
	pc.held = nil
	for _, f := range held {
		if err := pc.enqueue(pc.ctx, f); err != nil {
			return
		}
	}
}

// handle answers one text frame (nil when it cannot be answered).
func (pc *procConn) handle(data []byte) *Reply {
	req, err := DecodeMessage(data)
	if err != nil {
		var de *DecodeError
		errors.As(err, &de)
		if de.RequestID == "" {
			pc.badFrame(de.Reason, len(data))
			return nil
		}
		return &Reply{Action: de.Action, RequestID: de.RequestID, Status: 400, Message: de.Reason}
	}
	if req.RequestID == "" {
		pc.badFrame("no RequestId", len(data))
		return nil
	}
	h, ok := handlers[req.Action]
	if !ok {
		return &Reply{Action: req.Action, RequestID: req.RequestID, Status: 400,
			Message: fmt.Sprintf("unknown Action %q", clip(req.Action))}
	}
	ctx, cancel := context.WithTimeout(pc.ctx, pc.s.cfg.CallTimeout)
	fields, err := h(ctx, pc, &args{r: req})
	cancel()
	reply := &Reply{Action: req.Action, RequestID: req.RequestID, Status: 200, Fields: fields}
	if err != nil {
		reply.Status, reply.Message = pc.errorStatus(req.Action, err)
	}
	pc.log.Debug("sdk: request", "action", req.Action, "requestId", req.RequestID, "status", reply.Status)
	return reply
}

// errorStatus turns a handler error into a reply status and message: an
// *hosting.SDKError as it says, anything else 500 (and logged).
func (pc *procConn) errorStatus(action string, err error) (int, string) {
	var se *hosting.SDKError
	if errors.As(err, &se) && se.Status >= 400 && se.Status <= 599 {
		return se.Status, se.Message
	}
	pc.log.Error("sdk: request failed", "action", action, "err", err)
	return 500, "internal error"
}

func (pc *procConn) badFrame(reason string, size int) {
	pc.badFrames++
	level := slog.LevelDebug
	if pc.badFrames == 1 {
		level = slog.LevelWarn
	}
	pc.log.Log(pc.ctx, level, "sdk: frame dropped: it cannot be answered", "reason", reason,
		"bytes", size, "dropped", pc.badFrames)
}

// enqueue hands a frame to the writer, waiting while the queue is full.
func (pc *procConn) enqueue(ctx context.Context, f outFrame) error {
	select {
	case pc.send <- f:
		return nil
	case <-pc.ctx.Done():
		return fmt.Errorf("%w: %s", ErrNotConnected, pc.id.ProcessID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sendAndWait queues a frame and waits until the writer has written it.
// While a request of the process is being served, or after the reply to
// its ActivateServerProcess until its next request (or ReadyGrace), the
// frame is held back to follow, and sendAndWait returns at once: the
// sender may be that very request's handler (sessions sends TerminateProcess
// from inside the Heartbeat that ends a process), which must not wait for
// its own reply.
func (pc *procConn) sendAndWait(ctx context.Context, data []byte) error {
	done := make(chan error, 1)
	f := outFrame{data: data, done: done}
	pc.orderMu.Lock()
	if pc.serving || pc.awaitReady {
		pc.held = append(pc.held, f)
		pc.orderMu.Unlock()
		return nil
	}
	err := pc.enqueue(ctx, f)
	pc.orderMu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-pc.ctx.Done():
		select {
		case err := <-done: // written just before the socket ended
			return err
		default:
			return fmt.Errorf("%w: %s (the socket closed)", ErrNotConnected, pc.id.ProcessID)
		}
	}
}

// writeLoop writes queued frames until the socket is done. A frame that
// cannot be written in time ends the socket.
func (pc *procConn) writeLoop() {
	for {
		select {
		case <-pc.ctx.Done():
			return
		case f := <-pc.send:
			ctx, cancel := context.WithTimeout(pc.ctx, pc.s.cfg.WriteTimeout)
			err := pc.ws.Write(ctx, websocket.MessageText, f.data)
			cancel()
			if f.done != nil {
				f.done <- err
			}
			if err != nil {
				pc.log.Info("sdk: writing to the process failed", "err", err)
				pc.cancel()
				return
			}
		}
	}
}

// refreshAt returns when a credential expiring at expires should be
// refreshed: before before its expiry, but no earlier than half of its
// remaining life from now.
func refreshAt(now, expires time.Time, before time.Duration) time.Time {
	life := expires.Sub(now)
	if life <= 0 {
		return now
	}
	if before > life/2 {
		before = life / 2
	}
	return expires.Add(-before)
}

// refreshBefore sends the process RefreshConnection with a new token from
// the Issuer before its credential expires, unless the socket ends first.
// The SDK then opens a new socket with the new token (which gets its own
// refresh) and closes this one.
func (pc *procConn) refreshBefore(expires time.Time, endpoint string) {
	s := pc.s
	wait := refreshAt(s.cfg.Now(), expires, s.cfg.RefreshBefore).Sub(s.cfg.Now())
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-pc.ctx.Done():
		return
	case <-t.C:
	}
	ctx, cancel := context.WithTimeout(pc.ctx, s.cfg.CallTimeout)
	defer cancel()
	token, _, err := s.cfg.Issuer.IssueComputeToken(ctx, pc.id.FleetID, pc.id.ComputeName)
	if err != nil {
		pc.log.Warn("sdk: could not issue a token to refresh the connection", "err", err)
		return
	}
	frame, err := s.encodeMessage(hosting.Message{"Action": "RefreshConnection",
		"RefreshConnectionEndpoint": endpoint, "AuthToken": token})
	if err == nil {
		err = pc.sendAndWait(ctx, frame)
	}
	if err != nil {
		pc.log.Info("sdk: RefreshConnection not sent", "err", err)
		return
	}
	pc.log.Info("sdk: RefreshConnection sent", "endpoint", endpoint)
}
