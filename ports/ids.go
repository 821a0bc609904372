package ports

// IDs makes opaque, prefixed, time-sortable identifiers such as "usr_01J...".
type IDs interface {
	New(prefix string) string
}
