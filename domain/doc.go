// Package domain owns what every bounded context shares: the error kinds that
// use cases return and the single place that decides what a failure means.
// It imports only the standard library; the entities live in sub-packages.
package domain
