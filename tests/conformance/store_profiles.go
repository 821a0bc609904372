package conformance

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// profile returns an idle profile of the team with the given name and tags.
func (f storeFixture) profile(teamID, name string, tags ...string) profile.Profile {
	return profile.Profile{
		ID:          storeID("prf"),
		TeamID:      teamID,
		Name:        name,
		TemplateID:  "tpl_chrome_win_us",
		Browser:     profile.BrowserChromium,
		Fingerprint: windowsDevice(),
		Tags:        tags,
		Notes:       "warm-up: log in weekly",
		Version:     1,
		CreatedBy:   storeID("usr"),
		CreatedAt:   storeAt(0),
		UpdatedAt:   storeAt(0),
	}
}

// session returns a headless lease with a DevTools URL, started at start.
func (f storeFixture) session(start time.Time, ttl time.Duration) *profile.Session {
	return &profile.Session{
		ID:         storeID("ses"),
		StartedAt:  start,
		ExpiresAt:  start.Add(ttl),
		LaunchedBy: storeID("usr"),
		Headless:   true,
		CDPURL:     "ws://127.0.0.1:9222/devtools/browser/" + storeID("cdp"),
	}
}

// createProfiles stores every profile through the store.
func (f storeFixture) createProfiles(ps ...profile.Profile) {
	f.t.Helper()
	for _, p := range ps {
		_, err := f.s.Profiles().Create(f.ctx, p)
		f.must("create profile "+p.ID, err)
	}
}

// start gives the profile a session; the swap must apply.
func (f storeFixture) start(p profile.Profile, s *profile.Session) {
	f.t.Helper()
	ok, err := f.s.Profiles().SwapSession(f.ctx, p.TeamID, p.ID, profilestore.SessionSwap{Next: s})
	f.must("start session of "+p.ID, err)
	if !ok {
		f.t.Fatalf("starting a session on idle profile %s did not apply", p.ID)
	}
}

// expectProfile reads the profile back, in ctx's unit if any, and compares
// it with want. A want without a proxy view expects the view of a proxy the
// team does not have: its id alone.
func (f storeFixture) expectProfile(ctx context.Context, want profile.Profile) {
	f.t.Helper()
	got, err := f.s.Profiles().ByID(ctx, want.TeamID, want.ID)
	if err != nil {
		f.t.Fatalf("ByID %s: %v", want.ID, err)
	}
	if want.ProxyID != "" && want.Proxy == nil {
		want.Proxy = &profile.ProxyRef{ID: want.ProxyID}
	}
	checkEqual(f.t, "profile", got, want)
}

func profileIDs(ps []profile.Profile) []string {
	return ids(ps, func(p profile.Profile) string { return p.ID })
}

// reversed returns the ids of ps from last to first: newest first, for
// profiles created in order.
func reversed(ps ...profile.Profile) []string {
	out := profileIDs(ps)
	slices.Reverse(out)
	return out
}

func (f storeFixture) list(teamID string, filter profilestore.Filter) []profile.Profile {
	f.t.Helper()
	got, err := f.s.Profiles().List(f.ctx, teamID, filter)
	if err != nil {
		f.t.Fatalf("List %+v: %v", filter, err)
	}
	return got
}

// asListed is p as List reads it: the fingerprint's six fields that
// have columns of their own, and no device.
func asListed(p profile.Profile) profile.Profile {
	fp := p.Fingerprint
	p.Fingerprint = profile.Fingerprint{
		UserAgent: fp.UserAgent, Platform: fp.Platform, Locale: fp.Locale, Timezone: fp.Timezone,
		Screen: profile.Screen{Width: fp.Screen.Width, Height: fp.Screen.Height},
	}
	return p
}

// isQuota reports whether err is the quota error of a team holding bound
// profiles.
func isQuota(err error, bound int) bool {
	return err != nil && err.Error() == team.QuotaReached(bound, "profiles").Error()
}

// runProfileRepository checks the profile repository: creates and reads,
// updates and deletes, then sessions.
func runProfileRepository(t *testing.T, newStore NewStore) {
	runProfileCreatesAndReads(t, newStore)
	runProfileUpdatesAndDeletes(t, newStore)
	runProfileSessions(t, newStore)
}

// runProfileCreatesAndReads checks Create, Count, ByID and List.
func runProfileCreatesAndReads(t *testing.T, newStore NewStore) {
	t.Run("Count counts the team's profiles", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, otherID, emptyID := storeID("tm"), storeID("tm"), storeID("tm")
		for _, id := range []string{teamID, otherID, emptyID} {
			f.must("create the team", f.s.Teams().Create(f.ctx, team.Team{ID: id, Name: "Counted", CreatedAt: storeAt(0)}))
		}
		doomed := f.profile(teamID, "Three")
		// Create answers the team's count with the new profile.
		var created []int
		for _, p := range []profile.Profile{f.profile(teamID, "One"), f.profile(teamID, "Two"), doomed, f.profile(otherID, "Not mine")} {
			n, err := f.s.Profiles().Create(f.ctx, p)
			f.must("Create", err)
			created = append(created, n)
		}
		if want := []int{1, 2, 3, 1}; !slices.Equal(created, want) {
			t.Fatalf("Create answered the counts %v, want %v", created, want)
		}
		f.must("Delete", f.s.Profiles().Delete(f.ctx, teamID, doomed.ID))
		// A delete that fails uncounts nothing.
		if err := f.s.Profiles().Delete(f.ctx, teamID, doomed.ID); !domain.IsKind(err, domain.KindNotFound) {
			t.Fatalf("second Delete = %v, want not found", err)
		}
		counts := make([]int, 0, 4)
		for _, id := range []string{teamID, otherID, emptyID, storeID("tm")} {
			n, err := f.s.Profiles().Count(f.ctx, id)
			f.must("Count", err)
			counts = append(counts, n)
		}
		if want := []int{2, 1, 0, 0}; !slices.Equal(counts, want) {
			t.Fatalf("Count of the team, another, one without profiles and a missing one = %v, want %v", counts, want)
		}
	})

	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		full := f.profile(teamID, "Shop \u00e9\u4e16 \"quoted\"", "zeta", "alpha", "mid")
		full.ProxyID = storeID("prx")
		full.Notes = "line one\nline two \u2014 \u00fcml\u00e4ute"
		full.Version = 7
		full.CreatedAt = storeAt(time.Minute).In(storeZone)
		full.UpdatedAt = storeAt(time.Hour).In(storeZone)
		full.Data = &profile.Data{Content: *f.content(5 << 30), UpdatedAt: storeAt(30 * time.Minute).In(storeZone)}
		full.Cookies = f.content(0)
		// Data without cookies, and cookies without data, each stay alone.
		dataOnly := f.profile(teamID, "Data only")
		dataOnly.Data = &profile.Data{Content: *f.content(1), UpdatedAt: storeAt(0)}
		cookiesOnly := f.profile(teamID, "Cookies only")
		cookiesOnly.Cookies = f.content(123)
		f.createProfiles(dataOnly, cookiesOnly)
		f.expectProfile(f.ctx, dataOnly)
		f.expectProfile(f.ctx, cookiesOnly)
		bare := f.profile(teamID, "Bare")
		bare.Notes = ""
		// A device with empty lists, an auto locale and time zone, and a
		// phone's fields.
		bare.Fingerprint.Locale, bare.Fingerprint.Timezone = profile.Auto, profile.Auto
		bare.Fingerprint.Navigator = profile.Navigator{HardwareConcurrency: 8, DeviceMemory: 0.5, MaxTouchPoints: 5, Languages: []string{}}
		bare.Fingerprint.ClientHints = profile.ClientHints{Platform: "Android", PlatformVersion: "14.0.0", Model: "Pixel 8", Mobile: true}
		bare.Fingerprint.Screen.PixelRatio = 2.625
		bare.Fingerprint.Fonts = nil
		f.createProfiles(full, bare)
		f.expectProfile(f.ctx, full)
		f.expectProfile(f.ctx, bare)
		// A list shows the six fields of a summary, and no device.
		listed := f.list(teamID, profilestore.Filter{Limit: 10})
		for _, want := range []profile.Profile{full, bare} {
			i := slices.IndexFunc(listed, func(p profile.Profile) bool { return p.ID == want.ID })
			if i < 0 {
				t.Fatalf("List does not read %s", want.ID)
			}
			checkEqual(t, "listed profile.Fingerprint", listed[i].Fingerprint, asListed(want).Fingerprint)
		}
	})

	t.Run("reads carry the view of the team's proxy", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		px := f.proxy(teamID)
		f.must("create proxy", f.s.Proxies().Create(f.ctx, px))
		foreign := f.proxy(storeID("tm"))
		f.must("create proxy", f.s.Proxies().Create(f.ctx, foreign))
		withProxy := f.profile(teamID, "With proxy", "t1")
		withProxy.ProxyID = px.ID
		// A proxy of another team is never shown, even by a profile that
		// names it.
		withForeign := f.profile(teamID, "With another team's proxy")
		withForeign.ProxyID = foreign.ID
		f.createProfiles(withProxy, withForeign)
		view := &profile.ProxyRef{ID: px.ID, Type: string(px.Type), Host: px.Host, Port: px.Port}
		want := withProxy
		want.Proxy = view
		f.expectProfile(f.ctx, want)
		f.expectProfile(f.ctx, withForeign)
		listed := f.list(teamID, profilestore.Filter{Limit: 10})
		if len(listed) != 2 {
			t.Fatalf("List returned %d profiles, want 2", len(listed))
		}
		for _, got := range listed {
			switch got.ID {
			case withProxy.ID:
				checkEqual(t, "listed proxy view", got.Proxy, view)
			case withForeign.ID:
				checkEqual(t, "listed proxy view", got.Proxy, &profile.ProxyRef{ID: foreign.ID})
			}
		}

		// The view follows the proxy's changes, and the profile's.
		px.Host, px.Port = "moved.example.test", px.Port+1
		f.must("proxy Update", f.s.Proxies().Update(f.ctx, px))
		want.Proxy = &profile.ProxyRef{ID: px.ID, Type: string(px.Type), Host: "moved.example.test", Port: px.Port}
		f.expectProfile(f.ctx, want)
		off := want
		off.ProxyID, off.Proxy, off.Version = "", nil, want.Version+1
		f.must("Update off the proxy", f.s.Profiles().Update(f.ctx, off, want.Version))
		f.expectProfile(f.ctx, off)
		back := want
		back.Version = off.Version + 1
		f.must("Update back onto the proxy", f.s.Profiles().Update(f.ctx, back, off.Version))
		f.expectProfile(f.ctx, back)
		if got := f.list(teamID, profilestore.Filter{Limit: 10}); len(got) != 2 || (got[0].ID == back.ID && !reflect.DeepEqual(got[0].Proxy, back.Proxy)) || (got[1].ID == back.ID && !reflect.DeepEqual(got[1].Proxy, back.Proxy)) {
			t.Fatalf("listed after the changes: %+v", got)
		}
	})

	t.Run("creates counted under the team's lock hold its quota, also when they race", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		f.must("create the team", f.s.Teams().Create(f.ctx, team.Team{ID: teamID, Name: "Racers", CreatedAt: storeAt(0)}))
		const bound = 5
		f.createProfiles(f.profile(teamID, "first"))
		if created := raceCreates(t, f, teamID, 12, bound); created != bound-1 {
			t.Fatalf("%d of 12 racing creates succeeded with 1 of %d profiles, want %d", created, bound, bound-1)
		}
		expectCount(t, f, teamID, bound)
		// A delete frees one place, and only one.
		victim := f.list(teamID, profilestore.Filter{Limit: 1})[0]
		f.must("Delete", f.s.Profiles().Delete(f.ctx, teamID, victim.ID))
		if created := raceCreates(t, f, teamID, 6, bound); created != 1 {
			t.Fatalf("%d of 6 racing creates succeeded after a delete, want 1", created)
		}
		expectCount(t, f, teamID, bound)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "First", "a")
		f.createProfiles(p)
		again := f.profile(p.TeamID, "Second", "b")
		again.ID = p.ID
		_, err := f.s.Profiles().Create(f.ctx, again)
		expectConflict(t, "Create with the same id", err)
		elsewhere := f.profile(storeID("tm"), "Third")
		elsewhere.ID = p.ID
		_, err = f.s.Profiles().Create(f.ctx, elsewhere)
		expectConflict(t, "Create with the same id in another team", err)
		f.expectProfile(f.ctx, p)
	})

	t.Run("missing and another team's profile are not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Mine")
		f.createProfiles(p)
		_, err := f.s.Profiles().ByID(f.ctx, p.TeamID, storeID("prf"))
		expectNotFound(t, "ByID of an unknown id", err)
		_, err = f.s.Profiles().ByID(f.ctx, storeID("tm"), p.ID)
		expectNotFound(t, "ByID from another team", err)
		if err != nil && err.Error() != domain.NotFound("profile").Error() {
			t.Errorf("ByID from another team: message %q, want %q", err, domain.NotFound("profile"))
		}
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		p := f.profile(storeID("tm"), "Copy", "a", "b")
		p.Data = &profile.Data{Content: *f.content(10), UpdatedAt: storeAt(0)}
		p.Cookies = f.content(20)
		s := f.session(storeAt(0), time.Hour)
		want := p
		want.Tags = slices.Clone(p.Tags)
		want.Fingerprint = p.Fingerprint.Clone()
		sessCopy := *s
		want.Session = &sessCopy
		data, cookies := *p.Data, *p.Cookies
		want.Data, want.Cookies = &data, &cookies
		f.createProfiles(p)
		f.start(p, s)
		p.Tags[0] = "changed"
		p.Fingerprint.Fonts[0], p.Fingerprint.Navigator.Languages[0] = "changed", "changed"
		s.ID, s.Headless = "changed", false
		p.Data.SHA256, p.Cookies.Size = "changed", 1

		got, err := f.s.Profiles().ByID(f.ctx, p.TeamID, p.ID)
		f.must("ByID", err)
		got.Tags[1] = "changed"
		got.Fingerprint.Fonts[1], got.Fingerprint.Navigator.Languages[1] = "changed", "changed"
		got.Session.ID = "changed"
		got.Data.Size, got.Cookies.SHA256 = 1, "changed"
		listed := f.list(p.TeamID, profilestore.Filter{Limit: 10})
		listed[0].Tags[0] = "changed"
		listed[0].Session.CDPURL = "changed"
		listed[0].Data.UpdatedAt, listed[0].Cookies.Size = storeAt(time.Hour), 2

		f.expectProfile(f.ctx, want)
	})

	t.Run("List pages newest first by id", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, otherTeam := storeID("tm"), storeID("tm")
		var mine []profile.Profile
		for i := range 25 {
			p := f.profile(teamID, fmt.Sprintf("Profile %02d", i), fmt.Sprintf("t%d", i%3))
			if i%2 == 0 {
				p.Data = &profile.Data{Content: *f.content(int64(i) << 20), UpdatedAt: storeAt(time.Duration(i) * time.Minute)}
			}
			if i%3 == 0 {
				p.Cookies = f.content(int64(i))
			}
			f.createProfiles(p, f.profile(otherTeam, "Not mine"))
			mine = append(mine, p)
		}
		var pages [][]string
		var all []profile.Profile
		cursor := ""
		for range 5 {
			page := f.list(teamID, profilestore.Filter{BeforeID: cursor, Limit: 10})
			pages = append(pages, profileIDs(page))
			all = append(all, page...)
			if len(page) < 10 {
				break
			}
			cursor = page[len(page)-1].ID
		}
		sizes := make([]int, len(pages))
		for i, page := range pages {
			sizes[i] = len(page)
		}
		if fmt.Sprint(sizes) != "[10 10 5]" {
			t.Fatalf("page sizes %v, want [10 10 5]", sizes)
		}
		checkIDs(t, "every page, in order", profileIDs(all), reversed(mine...))
		// Each listed profile comes with its own tags.
		byID := map[string]profile.Profile{}
		for _, p := range mine {
			byID[p.ID] = p
		}
		for _, got := range all {
			checkEqual(t, "profile", got, asListed(byID[got.ID]))
		}
		if rest := f.list(teamID, profilestore.Filter{BeforeID: mine[0].ID, Limit: 10}); len(rest) != 0 {
			t.Fatalf("page before the oldest profile: %v, want none", profileIDs(rest))
		}
		if got := f.list(storeID("tm"), profilestore.Filter{Limit: 10}); len(got) != 0 {
			t.Fatalf("List of a team without profiles: %v", profileIDs(got))
		}
	})

	t.Run("List filters by name, status and tag", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		percent := f.profile(teamID, "100% Shop", "eu")
		plain := f.profile(teamID, "100 SHOP", "eu-west")
		underscore := f.profile(teamID, "a_b", "eu", "x")
		letter := f.profile(teamID, "axb", "Eu")
		backslash := f.profile(teamID, `back\slash`)
		noBackslash := f.profile(teamID, "backslash", "eu")
		running := f.profile(teamID, "Running shop", "x", "eu")
		other := f.profile(storeID("tm"), "100% Shop", "eu")
		f.createProfiles(percent, plain, underscore, letter, backslash, noBackslash, running, other)
		f.start(running, f.session(storeAt(0), time.Hour))

		for _, c := range []struct {
			name   string
			filter profilestore.Filter
			want   []string
		}{
			{"no filter", profilestore.Filter{}, reversed(percent, plain, underscore, letter, backslash, noBackslash, running)},
			{"name ignoring case", profilestore.Filter{Query: "sHoP"}, reversed(percent, plain, running)},
			{"percent is literal", profilestore.Filter{Query: "%"}, reversed(percent)},
			{"underscore is literal", profilestore.Filter{Query: "_"}, reversed(underscore)},
			{"backslash is literal", profilestore.Filter{Query: `\`}, reversed(backslash)},
			{"no match", profilestore.Filter{Query: "nothing"}, nil},
			{"running", profilestore.Filter{Status: profile.StatusRunning}, reversed(running)},
			{"idle", profilestore.Filter{Status: profile.StatusIdle}, reversed(percent, plain, underscore, letter, backslash, noBackslash)},
			{"exact tag", profilestore.Filter{Tag: "eu"}, reversed(percent, underscore, noBackslash, running)},
			{"tag is case-sensitive", profilestore.Filter{Tag: "EU"}, nil},
			{"second tag", profilestore.Filter{Tag: "x"}, reversed(underscore, running)},
			{"unknown tag", profilestore.Filter{Tag: "e"}, nil},
			{"name and tag", profilestore.Filter{Query: "shop", Tag: "eu"}, reversed(percent, running)},
			{"name, tag and status", profilestore.Filter{Query: "shop", Tag: "eu", Status: profile.StatusIdle}, reversed(percent)},
			{"tag and cursor", profilestore.Filter{Tag: "eu", BeforeID: running.ID}, reversed(percent, underscore, noBackslash)},
			{"tag, cursor and limit", profilestore.Filter{Tag: "eu", BeforeID: noBackslash.ID, Limit: 1}, reversed(underscore)},
			{"limit keeps the newest", profilestore.Filter{Status: profile.StatusIdle, Limit: 2}, reversed(backslash, noBackslash)},
		} {
			if c.filter.Limit == 0 {
				c.filter.Limit = 100
			}
			checkIDs(t, c.name, profileIDs(f.list(teamID, c.filter)), c.want)
		}
	})
}

// expectCount checks that the team holds n profiles.
func expectCount(t *testing.T, f storeFixture, teamID string, n int) {
	t.Helper()
	got, err := f.s.Profiles().Count(f.ctx, teamID)
	f.must("Count", err)
	if got != n {
		t.Fatalf("the team holds %d profiles, want %d", got, n)
	}
}

// raceCreates runs n creates in the team at once, each in a unit that
// counts the team's profiles under its lock and creates one while they are
// under bound, as the profiles module does, and returns how many
// succeeded; a create that fails otherwise than with the quota error fails
// the test.
func raceCreates(t *testing.T, f storeFixture, teamID string, n, bound int) int {
	t.Helper()
	var created atomic.Int32
	storeWithin(t, "concurrent creates", func() {
		errs := runConcurrently(n, func(i int) error {
			p := f.profile(teamID, fmt.Sprintf("racer %d", i))
			// As application/profiles creates: the row and its count, which
			// takes the team's lock and must include this row and every
			// create that held the lock before, committed.
			err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
				held, err := tx.Profiles().Create(ctx, p)
				if err != nil {
					return err
				}
				return team.CheckQuota(held-1, bound, "profiles")
			})
			if err == nil {
				created.Add(1)
			}
			return err
		})
		for _, err := range errs {
			if err != nil && !isQuota(err, bound) {
				t.Errorf("a create beyond the bound failed with %v, want the quota error", err)
			}
		}
	})
	return int(created.Load())
}
