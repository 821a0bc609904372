package ports

import "context"

// UnitOfWork runs a function in one transaction. The transaction travels in
// fn's context: every repository called with that context (or one derived
// from it) joins the unit, so a use case can combine the repositories of
// several modules without any of them knowing the others. If fn returns an
// error (or panics) nothing it wrote stays, outbox included; otherwise all of
// it commits.
//
// A repository called with a context that carries no unit runs on its own.
// Do called with a context that already carries a unit of the same store is
// refused with an error (units do not nest), and so is a repository call with
// the context of a unit that has ended: it writes nothing.
type UnitOfWork interface {
	Do(ctx context.Context, fn func(ctx context.Context) error) error
}
