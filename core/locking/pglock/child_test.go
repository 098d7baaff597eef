package pglock_test

// child reports whether this test binary runs as a subprocess of a test
// (see the pause test); then it has done its work.
func child() bool { return false }
