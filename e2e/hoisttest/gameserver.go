package hoisttest

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	gameServerOnce sync.Once
	gameServerPath string
	gameServerZip  []byte
	gameServerErr  error
)

// GameServerBinary builds e2e/gameserver (the SDK 5 test game server) once
// per test binary, in a directory every user may read and run (an
// Anywhere fleet's launch path is a path on its hosts, and game servers
// run as an unprivileged account), and returns the binary's path.
func GameServerBinary(t testing.TB) string {
	t.Helper()
	buildGameServer()
	if gameServerErr != nil {
		t.Fatal(gameServerErr)
	}
	return gameServerPath
}

// GameServerZip returns a build archive holding the binary GameServerBinary
// builds, as `gameserver` (made once per test binary).
func GameServerZip(t testing.TB) []byte {
	t.Helper()
	buildGameServer()
	if gameServerErr != nil {
		t.Fatal(gameServerErr)
	}
	return gameServerZip
}

// RemoveGameServer removes what GameServerBinary built, if it did (call
// it from TestMain once the tests ran).
func RemoveGameServer() {
	if gameServerPath != "" {
		_ = os.RemoveAll(filepath.Dir(gameServerPath))
	}
}

// buildGameServer builds the game server and its archive, once.
func buildGameServer() {
	gameServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hoist-e2e-gameserver-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			gameServerErr = err
			return
		}
		gameServerPath, gameServerZip, gameServerErr = BuildGameServer(dir)
	})
}

// BuildGameServer builds e2e/gameserver (stripped) into dir and returns
// its path and a build archive holding it (GameServerArchive).
func BuildGameServer(dir string) (string, []byte, error) {
	bin := filepath.Join(dir, "gameserver")
	if err := GoBuild("./e2e/gameserver", bin, "-ldflags=-s -w"); err != nil {
		return "", nil, err
	}
	archive, err := GameServerArchive(bin)
	return bin, archive, err
}

// GameServerArchive returns a build archive (zip) holding the file bin as
// `gameserver`, executable.
func GameServerArchive(bin string) ([]byte, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	hdr := &zip.FileHeader{Name: "gameserver", Method: zip.Deflate}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = zw.Close()
	}
	return buf.Bytes(), err
}
