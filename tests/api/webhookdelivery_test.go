package api_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/tests/poll"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// TestAPIOnlyInstanceLeavesDeliveryToOthers: an instance with
// WEBHOOK_DELIVERY=off commits the events of its creates and queues their
// deliveries but attempts none; an instance with delivery on,
// started later on the same PostgreSQL database, delivers every one of
// them once, and then the events the API-only instance goes on committing.
func TestAPIOnlyInstanceLeavesDeliveryToOthers(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	apiOnly := webhookOptions(url)
	apiOnly.env["WEBHOOK_DELIVERY"] = "off"
	off := start(t, apiOnly)

	rc := newReceiver(t, 200)
	a := off.register(t)
	ep := off.subscribe(t, a, rc.srv.URL+"/hook", "profile.created")
	var profiles []string
	for range 5 {
		profiles = append(profiles, off.createProfile(t, a, nil))
	}
	// Nothing can be waited for here: the proof is that nothing happens
	// while a dispatcher, had one run, would have polled a hundred times.
	poll.Throughout(t, 100*5*time.Millisecond, func() error {
		if n := len(rc.requests()); n > 0 {
			return fmt.Errorf("the receiver got %d deliveries from an instance with WEBHOOK_DELIVERY=off", n)
		}
		for _, d := range off.deliveries(t, a, ep, "") {
			if d["status"] != "pending" || len(asList(d["attempts"])) > 0 {
				return fmt.Errorf("an instance with WEBHOOK_DELIVERY=off attempted a delivery: %v", d)
			}
		}
		return nil
	})

	on := start(t, webhookOptions(url))
	rc.waitFor(len(profiles))
	profiles = append(profiles, off.createProfile(t, a, nil))
	rc.waitFor(len(profiles))
	poll.Until(t, "every delivery recorded as succeeded", func() bool {
		return len(on.deliveries(t, a, ep, "succeeded")) == len(profiles)
	})

	var delivered []string
	for _, r := range rc.requests() {
		profile, _ := r.payload["data"].(map[string]any)["profile"].(map[string]any)
		delivered = append(delivered, str(profile["id"]))
		if !r.validMAC {
			t.Fatalf("delivery of %v carries a bad signature", profile["id"])
		}
	}
	slices.Sort(delivered)
	slices.Sort(profiles)
	if !slices.Equal(delivered, profiles) {
		t.Fatalf("delivered the events of %v, want each of %v once", delivered, profiles)
	}
	for _, d := range on.deliveries(t, a, ep, "succeeded") {
		if n := len(asList(d["attempts"])); n != 1 {
			t.Fatalf("delivery %v recorded %d attempts, want 1", d["id"], n)
		}
	}
}
