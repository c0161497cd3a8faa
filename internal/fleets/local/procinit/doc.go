// Package procinit runs a server process (or an install script) under a
// tiny init of its own, in new PID and mount namespaces, so that nothing
// the process starts can outlive it however it detached (setsid, double
// fork), and so that it sees no other process of the machine.
//
// Hoist starts the init by executing its own binary again (/proc/self/exe)
// with a hidden argv[0]; the package's init function recognises it before
// main runs, in any binary that links this package (hoist and the test
// binaries alike). The init is PID 1 of its namespace: it makes the mounts
// private, mounts a /proc of the namespace, starts the process (as the
// account given, in a process group of its own), forwards the signals it
// gets to that group, reaps every orphan, and when the process ends reports
// how over a pipe and exits; the kernel then kills whatever is left in the
// namespace. Hoist started it with a parent-death signal, so kill -9 of
// Hoist ends it, and with it the namespace.
//
// The init depends on nothing of Hoist's state: what to run comes from a
// pipe, its report goes back over another. Only Linux has the namespaces;
// the package is empty elsewhere.
package procinit
