//go:build linux

// Package activations learns when game sessions became ACTIVE from the
// output of the test game servers (e2e/gameserver), for the load tools
// (e2e/hostingload, e2e/hostsload): a Watcher follows the server
// processes' log files with inotify and timestamps each activation line
// when it reads it, adding no request to Hoist.
package activations

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Watcher learns the moment each game session became ACTIVE
// from the output of the game servers: the test game server logs
// `msg="game session activated" gameSession=<ID>` right after Hoist
// answered its ActivateGameSession with 200, and Hoist answers only after
// the transaction that made the session ACTIVE committed. The watcher
// follows the processes' log files (each server process's stdout, in its
// instance's logs directory) with inotify and timestamps each activation
// line when it reads it: the time recorded is later than the commit by the
// reply's trip to the game server, one write to the log file and one
// inotify wake-up (tens of microseconds on loopback), and never earlier.
// Unlike polling DescribeGameSessions it adds no requests to Hoist.
type Watcher struct {
	f *os.File // the inotify descriptor

	mu      sync.Mutex
	dirs    map[int32]string // watch descriptor -> directory
	files   map[string]*tailFile
	seen    map[string]activation // game session ID -> what its game server logged
	waiters map[string]chan activation
	err     error
	done    chan struct{}
}

// tailFile is a log file read up to off; partial holds an unfinished line.
type tailFile struct {
	mu      sync.Mutex
	f       *os.File
	partial []byte
}

// New starts a Watcher; Close stops it.
func New() (*Watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &Watcher{f: os.NewFile(uintptr(fd), "inotify"), dirs: map[int32]string{}, files: map[string]*tailFile{},
		seen: map[string]activation{}, waiters: map[string]chan activation{}, done: make(chan struct{})}
	go w.loop()
	return w, nil
}

// Watch follows every log file in dir, existing and new.
func (w *Watcher) Watch(dir string) error {
	wd, err := syscall.InotifyAddWatch(int(w.f.Fd()), dir, syscall.IN_MODIFY|syscall.IN_CREATE)
	if err != nil {
		return fmt.Errorf("inotify watch %s: %w", filepath.Base(dir), err)
	}
	w.mu.Lock()
	w.dirs[int32(wd)] = dir
	w.mu.Unlock()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		w.readFile(filepath.Join(dir, e.Name()))
	}
	return nil
}

// Close stops the watcher and closes every file.
func (w *Watcher) Close() {
	w.f.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.files {
		t.f.Close()
	}
	w.files = map[string]*tailFile{}
}

// loop reads inotify events and the lines they announce until Close.
func (w *Watcher) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
			}
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
				w.rescan() // events were lost: read every file
				continue
			}
			w.mu.Lock()
			dir, ok := w.dirs[ev.Wd]
			w.mu.Unlock()
			if ok && len(name) > 0 {
				w.readFile(filepath.Join(dir, string(name)))
			}
		}
	}
}

// readFile reads what was appended to a log file since the last read and
// records the activations it names.
func (w *Watcher) readFile(path string) {
	if !strings.HasSuffix(path, ".log") {
		return
	}
	w.mu.Lock()
	t := w.files[path]
	w.mu.Unlock()
	if t == nil {
		f, err := os.Open(path)
		if err != nil {
			return // removed already
		}
		t = &tailFile{f: f}
		w.mu.Lock()
		if old := w.files[path]; old != nil {
			f.Close()
			t = old
		} else {
			w.files[path] = t
		}
		w.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var chunk [32 << 10]byte
	for {
		n, err := t.f.Read(chunk[:])
		if n > 0 {
			now := time.Now()
			data := append(t.partial, chunk[:n]...)
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					break
				}
				if id, ignored, ok := sessionLine(data[:i]); ok {
					w.activated(id, activation{at: now, ignored: ignored})
				}
				data = data[i+1:]
			}
			t.partial = append(t.partial[:0], data...)
		}
		if err == io.EOF || n == 0 {
			return
		}
		if err != nil {
			return
		}
	}
}

// rescan reads every file of every watched directory.
func (w *Watcher) rescan() {
	w.mu.Lock()
	var dirs []string
	for _, d := range w.dirs {
		dirs = append(dirs, d)
	}
	w.mu.Unlock()
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			w.readFile(filepath.Join(d, e.Name()))
		}
	}
}

// activation is what a game server logged about a game session: when it
// was activated, or that it was ignored.
type activation struct {
	at      time.Time
	ignored bool
}

func (w *Watcher) activated(id string, a activation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, ok := w.waiters[id]; ok {
		delete(w.waiters, id)
		ch <- a
		return
	}
	w.seen[id] = a
}

// ErrIgnored is a game session whose CreateGameSession message the game
// server ignored because it arrived before the game server had handled the
// reply to its ProcessReady (the Go SDK's race, which the test game server
// reproduces; see docs/sdk-endpoint.md).
var ErrIgnored = errors.New("the game server ignored the CreateGameSession: it had not yet handled its ProcessReady reply")

// Wait returns when game session id was seen ACTIVE; ErrIgnored when its
// game server ignored it; or an error after timeout. It may be called
// after the activation was seen.
func (w *Watcher) Wait(id string, timeout time.Duration) (time.Time, error) {
	w.mu.Lock()
	if a, ok := w.seen[id]; ok {
		delete(w.seen, id)
		w.mu.Unlock()
		return a.result()
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return time.Time{}, err
	}
	ch := make(chan activation, 1)
	w.waiters[id] = ch
	w.mu.Unlock()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-ch:
		return a.result()
	case <-timer.C:
		w.mu.Lock()
		delete(w.waiters, id)
		w.mu.Unlock()
		select {
		case a := <-ch: // seen as the timer fired
			return a.result()
		default:
		}
		return time.Time{}, fmt.Errorf("game session not seen ACTIVE within %s", timeout)
	}
}

func (a activation) result() (time.Time, error) {
	if a.ignored {
		return a.at, ErrIgnored
	}
	return a.at, nil
}

var (
	activationMsg = []byte(`msg="game session activated"`)
	ignoredMsg    = []byte(`msg="game session on a process that is not ready: ignored"`)
	sessionKey    = []byte(" gameSession=")
)

// sessionLine parses a log line of the test game server (log/slog's text
// format): ok when it says that the game server activated a game session,
// or (ignored) that it ignored one; id is the game session.
func sessionLine(line []byte) (id string, ignored, ok bool) {
	switch {
	case bytes.Contains(line, activationMsg):
	case bytes.Contains(line, ignoredMsg):
		ignored = true
	default:
		return "", false, false
	}
	id, ok = attr(line, sessionKey)
	return id, ignored, ok
}

// attr returns the value of the attribute whose key (with its leading
// space and trailing '=') is key in a log/slog text line.
func attr(line, key []byte) (string, bool) {
	i := bytes.Index(line, key)
	if i < 0 {
		return "", false
	}
	v := line[i+len(key):]
	if len(v) > 0 && v[0] == '"' {
		// A quoted value: find its end and unquote it.
		for j := 1; j < len(v); j++ {
			if v[j] == '\\' {
				j++
				continue
			}
			if v[j] == '"' {
				s, err := strconv.Unquote(string(v[:j+1]))
				return s, err == nil && s != ""
			}
		}
		return "", false
	}
	if j := bytes.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return string(v), len(v) > 0
}
