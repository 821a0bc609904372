// Package apptest holds test doubles of the ports the use cases need, and the
// two error assertions their tests share (WantKind, WantDown), for the
// tests of the application packages. Each double is safe for concurrent use;
// those of a port that can fail fail on demand, with the error a test sets
// before the calls it should fail.
//
// Like the application, it knows only ports, domain and the standard
// library; a double of a module's storage port stays with that module's
// tests.
package apptest
