// Package notices owns the implementations of ports.Notices: in process for
// a single instance, Redis pub/sub for instances that share a Redis, and
// PostgreSQL LISTEN/NOTIFY for instances that share only a PostgreSQL
// database. The Redis and PostgreSQL adapters multiplex every topic over one
// channel and one connection per instance, so that a new topic costs no
// connection and no LISTEN.
package notices

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/profilesvc/profilesvc/ports"
)

// hub holds the subscriptions of one adapter and calls them. Every call to
// a handler holds deliverMu, so a subscription sees its notices one at a
// time and in the order the transport delivered them, and a new
// subscription's NoticeListening comes before any message.
type hub struct {
	deliverMu sync.Mutex

	mu        sync.Mutex
	subs      map[string]map[*subscription]struct{}
	listening bool
}

type subscription struct{ h func(ports.Notice) }

func newHub(listening bool) *hub {
	return &hub{subs: map[string]map[*subscription]struct{}{}, listening: listening}
}

func (b *hub) subscribe(topic string, h func(ports.Notice)) (cancel func()) {
	s := &subscription{h: h}
	b.deliverMu.Lock()
	defer b.deliverMu.Unlock()
	b.mu.Lock()
	if b.subs[topic] == nil {
		b.subs[topic] = map[*subscription]struct{}{}
	}
	b.subs[topic][s] = struct{}{}
	listening := b.listening
	b.mu.Unlock()
	if listening {
		h(ports.Notice{Kind: ports.NoticeListening})
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			delete(b.subs[topic], s)
			if len(b.subs[topic]) == 0 {
				delete(b.subs, topic)
			}
		})
	}
}

// deliver calls topic's subscribers with payload.
func (b *hub) deliver(topic, payload string) {
	b.deliverMu.Lock()
	defer b.deliverMu.Unlock()
	for _, s := range b.snapshot(topic) {
		s.h(ports.Notice{Kind: ports.NoticeMessage, Payload: payload})
	}
}

// setListening tells every subscription that the transport was lost
// (NoticeDeaf, once) or is heard again (NoticeListening, every time: a
// new connection may follow a loss the transport did not report).
func (b *hub) setListening(listening bool) {
	b.deliverMu.Lock()
	defer b.deliverMu.Unlock()
	b.mu.Lock()
	was := b.listening
	b.listening = listening
	b.mu.Unlock()
	if !listening && !was {
		return
	}
	kind := ports.NoticeListening
	if !listening {
		kind = ports.NoticeDeaf
	}
	for _, s := range b.snapshot("") {
		s.h(ports.Notice{Kind: kind})
	}
}

// snapshot returns topic's subscriptions, or every one for "".
func (b *hub) snapshot(topic string) []*subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*subscription
	for t, subs := range b.subs {
		if topic != "" && t != topic {
			continue
		}
		for s := range subs {
			out = append(out, s)
		}
	}
	return out
}

// checkNotice refuses a topic outside [a-z0-9._-]{1,64}, so that a topic
// never contains the separator of the wire form, and a payload over
// ports.MaxNoticePayload, which NOTIFY would refuse.
func checkNotice(topic, payload string) error {
	if topic == "" || len(topic) > 64 {
		return fmt.Errorf("notices: topic %q must be 1 to 64 characters", topic)
	}
	for _, r := range topic {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("notices: topic %q may only hold a-z, 0-9, '.', '_' and '-'", topic)
		}
	}
	if len(payload) > ports.MaxNoticePayload {
		return fmt.Errorf("notices: payload of %d bytes is over %d", len(payload), ports.MaxNoticePayload)
	}
	return nil
}

// Wire is how a notice travels on a shared channel: its topic, a newline,
// its payload. A statement that notifies by itself (a trigger, a
// pg_notify in a transaction) writes this form.
func Wire(topic, payload string) string { return topic + "\n" + payload }

var errNotWire = errors.New("notices: message without a topic")

func unwire(msg string) (topic, payload string, err error) {
	topic, payload, ok := strings.Cut(msg, "\n")
	if !ok || topic == "" {
		return "", "", errNotWire
	}
	return topic, payload, nil
}
