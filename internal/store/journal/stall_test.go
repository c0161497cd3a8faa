package journal

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hoistgg/hoist/internal/store"
)

// TestNoRawSystemCalls: the journal's file I/O goes through the os package
// (the runtime's system call path, which lets other goroutines have the P
// while the kernel works), never a raw system call that keeps the P: with
// one, a write hanging on a stalled disk made every garbage collection's
// stop-the-world wait for the disk, freezing the whole process. (It failed
// before: writeHoldingP used syscall.RawSyscall6 for direct writes.)
func TestNoRawSystemCalls(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "RawSyscall") {
				t.Errorf("%s: %s keeps the P through a system call", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// TestStalledWrite: while the disk holds a journal write, the rest of the
// store and the process go on: garbage collections complete, Views answer,
// the store does not report a failure; once the disk answers the Update
// returns.
func TestStalledWrite(t *testing.T) {
	forWriteModes(t, func(t *testing.T, opts Options) {
		m := newMemFS()
		opts.fs = m
		s := openDir(t, "/mem/store", opts)
		put(t, s, "before", "1")
		stalled, release := make(chan struct{}), make(chan struct{})
		var once atomic.Bool
		m.stall = func(path string) {
			if strings.Contains(path, journalPrefix) && once.CompareAndSwap(false, true) {
				close(stalled)
				<-release
			}
		}
		done := make(chan error, 1)
		go func() {
			done <- s.Update(context.Background(), func(tx store.Tx) error {
				return tx.Put(context.Background(), store.Record{Kind: "K", ID: "during", Data: []byte("2")})
			})
		}()
		<-stalled
		gc := make(chan struct{})
		go func() { runtime.GC(); close(gc) }()
		select {
		case <-gc:
		case <-time.After(10 * time.Second):
			t.Fatal("a garbage collection waited for the stalled write")
		}
		if got := contents(t, s); got["before"] != "1" || got["during"] != "" {
			t.Errorf("View during the stalled write: %v", got)
		}
		if err := s.Failed(); err != nil {
			t.Errorf("Failed() during a slow write: %v", err)
		}
		select {
		case err := <-done:
			t.Fatalf("Update returned before its write was durable: %v", err)
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := contents(t, s); got["during"] != "2" {
			t.Errorf("after the write: %v", got)
		}
	})
}
