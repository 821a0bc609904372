// Package ports holds the interfaces the application needs from the outside
// world, one file per concern. Adapters implement them; the application and
// the conformance suites in tests/conformance depend only on them.
package ports
