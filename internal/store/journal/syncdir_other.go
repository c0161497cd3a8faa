//go:build !unix

package journal

// syncDir does nothing where directories cannot be opened for fsync
// (Windows makes a rename durable with the file's own flush).
func syncDir(string) error { return nil }
