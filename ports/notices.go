package ports

import "context"

// Notices carries small messages to every running instance of the service,
// the sender included: what one instance changed that others keep copies of
// (an in-process cache of credentials, a sleeping dispatcher). Delivery is
// at most once and unordered across senders; a subscriber that cannot afford
// to miss one learns when it may have, from the NoticeListening that follows
// a lost connection, and rebuilds from the store.
type Notices interface {
	// Publish sends payload to every subscriber of topic on every instance.
	// It returns once the notice is handed to the transport, not once it is
	// delivered. A topic is 1 to 64 of [a-z0-9._-]; a payload is at most
	// MaxNoticePayload bytes.
	Publish(ctx context.Context, topic, payload string) error
	// Subscribe calls h with every notice of topic until cancel is called.
	// h runs on the adapter's delivery goroutine, one notice at a time, and
	// must not block. The first notice h receives is NoticeListening, once
	// the subscription hears what is published.
	Subscribe(topic string, h func(Notice)) (cancel func())
}

// MaxNoticePayload bounds a payload, under PostgreSQL's NOTIFY limit of
// 8000 bytes with room for the topic.
const MaxNoticePayload = 7000

// NoticeKind says what a Notice reports.
type NoticeKind int

const (
	// NoticeMessage is a published payload.
	NoticeMessage NoticeKind = iota
	// NoticeListening says that from now on every notice of the topic
	// reaches the subscriber. It comes first, and again after every
	// NoticeDeaf: notices published in between may have been lost, so a
	// subscriber drops whatever they would have invalidated.
	NoticeListening
	// NoticeDeaf says that the transport was lost: notices published from
	// now until the next NoticeListening may never arrive.
	NoticeDeaf
)

// Notice is one delivery to a subscriber.
type Notice struct {
	Kind NoticeKind
	// Payload is set for NoticeMessage only.
	Payload string
}
