package notices

import (
	"context"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.Notices = (*Local)(nil)

// Local delivers notices within this process: the whole audience of a
// single instance. Publish calls the subscribers before it returns.
type Local struct{ hub *hub }

// NewLocal returns notices for one process; it always listens.
func NewLocal() *Local { return &Local{hub: newHub(true)} }

// Publish calls topic's subscribers with payload.
func (l *Local) Publish(_ context.Context, topic, payload string) error {
	if err := checkNotice(topic, payload); err != nil {
		return err
	}
	l.hub.deliver(topic, payload)
	return nil
}

// Subscribe calls h with every notice of topic, starting with
// NoticeListening, until cancel is called.
func (l *Local) Subscribe(topic string, h func(ports.Notice)) (cancel func()) {
	return l.hub.subscribe(topic, h)
}
