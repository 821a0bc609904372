package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/ports/teamstore"
)

// lockRounds is how many teams the lock check races on: one race may happen
// to run its two units one after the other even without a lock.
const lockRounds = 10

func memberIDs(ms []team.Member) []string {
	return ids(ms, func(m team.Member) string { return m.ID })
}

// createMembers stores every membership through the store.
func (f storeFixture) createMembers(ms ...team.Member) {
	f.t.Helper()
	for _, m := range ms {
		f.must("create membership "+m.ID, f.s.Memberships().Create(f.ctx, m))
	}
}

// expectMember reads the membership back by id and compares it with want.
func (f storeFixture) expectMember(want team.Member) {
	f.t.Helper()
	got, err := f.s.Memberships().ByID(f.ctx, want.TeamID, want.ID)
	if err != nil {
		f.t.Fatalf("ByID %s: %v", want.ID, err)
	}
	checkEqual(f.t, "member", got, want)
}

func (f storeFixture) count(teamID string) (active, owners int) {
	f.t.Helper()
	active, owners, err := f.s.Memberships().Count(f.ctx, teamID)
	if err != nil {
		f.t.Fatalf("Count %s: %v", teamID, err)
	}
	return active, owners
}

// runTeamMemberships checks the membership methods a team's administration
// uses: invited members without an account, lookups by id and email, paging,
// updates and counts.
func runTeamMemberships(t *testing.T, newStore NewStore) {
	t.Run("invited members without an account may share the empty user id", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		a := f.invited(teamID, "first-"+storeID("n")+"@example.com")
		b := f.invited(teamID, "second-"+storeID("n")+"@example.com")
		f.createMembers(a, b)
		f.expectMember(a)
		f.expectMember(b)

		// The empty user id is no user: it finds no membership.
		_, err := f.s.Memberships().ByUser(f.ctx, teamID, "")
		expectNotFound(t, "ByUser of the empty user id", err)
		none, err := f.s.Memberships().ListByUser(f.ctx, "")
		f.must("ListByUser of the empty user id", err)
		if len(none) != 0 {
			t.Fatalf("ListByUser of the empty user id: got %d memberships", len(none))
		}
	})

	t.Run("an email is a member of a team once, whatever its case", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		m := f.invited(teamID, "Case-"+storeID("n")+"@Example.com")
		f.createMembers(m)

		upper := f.invited(teamID, strings.ToUpper(m.Email))
		expectConflict(t, "Create with the same email in another case", f.s.Memberships().Create(f.ctx, upper))
		withUser := f.member(teamID, team.RoleAdmin, team.StatusActive)
		withUser.Email = strings.ToLower(m.Email)
		expectConflict(t, "Create of a user with the same email", f.s.Memberships().Create(f.ctx, withUser))
		_, err := f.s.Memberships().ByID(f.ctx, teamID, upper.ID)
		expectNotFound(t, "ByID of the refused membership", err)
		_, err = f.s.Memberships().ByUser(f.ctx, teamID, withUser.UserID)
		expectNotFound(t, "ByUser of the refused membership", err)

		// The same email in another team is another membership.
		elsewhere := f.invited(storeID("tm"), m.Email)
		f.createMembers(elsewhere)
		f.expectMember(elsewhere)
		f.expectMember(m)
	})

	t.Run("ByID is scoped by team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.owner(storeID("tm"))
		f.createMembers(m)
		f.expectMember(m)
		_, err := f.s.Memberships().ByID(f.ctx, storeID("tm"), m.ID)
		expectNotFound(t, "ByID in another team", err)
		_, err = f.s.Memberships().ByID(f.ctx, m.TeamID, storeID("mem"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("ByEmail ignores case and is scoped by team", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		invited := f.invited(teamID, "mixed-"+storeID("n")+"@example.com")
		removed := f.member(teamID, team.RoleViewer, team.StatusRemoved)
		other := f.invited(storeID("tm"), "other-"+storeID("n")+"@example.com")
		f.createMembers(invited, removed, other)

		for _, email := range []string{invited.Email, strings.ToUpper(invited.Email)} {
			got, err := f.s.Memberships().ByEmail(f.ctx, teamID, email)
			f.must("ByEmail "+email, err)
			checkEqual(t, "member", got, invited)
		}
		got, err := f.s.Memberships().ByEmail(f.ctx, teamID, removed.Email)
		f.must("ByEmail of a removed member", err)
		checkEqual(t, "member", got, removed)

		_, err = f.s.Memberships().ByEmail(f.ctx, teamID, other.Email)
		expectNotFound(t, "ByEmail of another team's member", err)
		_, err = f.s.Memberships().ByEmail(f.ctx, storeID("tm"), invited.Email)
		expectNotFound(t, "ByEmail in another team", err)
		_, err = f.s.Memberships().ByEmail(f.ctx, teamID, "nobody-"+storeID("n")+"@example.com")
		expectNotFound(t, "ByEmail of an unknown email", err)
	})

	t.Run("Update replaces the user id, role, status and JoinedAt only", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.invited(storeID("tm"), "joiner-"+storeID("n")+"@example.com")
		sibling := f.invited(m.TeamID, "sibling-"+storeID("n")+"@example.com")
		f.createMembers(m, sibling)

		joined := storeAt(time.Hour).In(storeZone)
		next := m
		next.UserID, next.Role, next.Status, next.JoinedAt = storeID("usr"), team.RoleAdmin, team.StatusActive, &joined
		// Neither the email nor the invitation time is Update's to change.
		sent := next
		sent.Email, sent.InvitedAt = "changed-"+storeID("n")+"@example.com", storeAt(99*time.Hour)
		f.must("Update", f.s.Memberships().Update(f.ctx, sent))

		f.expectMember(next)
		got, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, next.UserID)
		f.must("ByUser after Update", err)
		checkEqual(t, "member", got, next)
		got, err = f.s.Memberships().ByEmail(f.ctx, m.TeamID, m.Email)
		f.must("ByEmail after Update", err)
		checkEqual(t, "member", got, next)
		_, err = f.s.Memberships().ByEmail(f.ctx, m.TeamID, sent.Email)
		expectNotFound(t, "ByEmail of the email Update was given", err)
		f.expectMember(sibling)
	})

	t.Run("Update moves the user id", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.member(storeID("tm"), team.RoleMember, team.StatusActive)
		f.createMembers(m)
		oldUser := m.UserID
		moved := m
		moved.UserID = storeID("usr")
		f.must("Update", f.s.Memberships().Update(f.ctx, moved))

		_, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, oldUser)
		expectNotFound(t, "ByUser of the user id moved from", err)
		got, err := f.s.Memberships().ByUser(f.ctx, m.TeamID, moved.UserID)
		f.must("ByUser of the user id moved to", err)
		checkEqual(t, "member", got, moved)

		// The old user id is free again.
		again := f.member(m.TeamID, team.RoleViewer, team.StatusInvited)
		again.UserID = oldUser
		f.createMembers(again)
		got, err = f.s.Memberships().ByUser(f.ctx, m.TeamID, oldUser)
		f.must("ByUser of the freed user id", err)
		checkEqual(t, "member", got, again)
	})

	t.Run("Update to a user already a member is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		owner := f.owner(storeID("tm"))
		invited := f.invited(owner.TeamID, "late-"+storeID("n")+"@example.com")
		f.createMembers(owner, invited)

		clash := invited
		clash.UserID, clash.Status, clash.JoinedAt = owner.UserID, team.StatusActive, storePtr(storeAt(time.Hour))
		expectConflict(t, "Update to the owner's user id", f.s.Memberships().Update(f.ctx, clash))
		f.expectMember(invited)
		got, err := f.s.Memberships().ByUser(f.ctx, owner.TeamID, owner.UserID)
		f.must("ByUser of the owner", err)
		checkEqual(t, "member", got, owner)

		// A user id that is a member of another team only is free here.
		elsewhere := f.owner(storeID("tm"))
		f.createMembers(elsewhere)
		ok := invited
		ok.UserID, ok.Status, ok.JoinedAt = elsewhere.UserID, team.StatusActive, storePtr(storeAt(time.Hour))
		f.must("Update to a user of another team", f.s.Memberships().Update(f.ctx, ok))
		f.expectMember(ok)

		// Updating a membership with its own user id is no clash.
		owner.Role = team.RoleAdmin
		f.must("Update keeping the user id", f.s.Memberships().Update(f.ctx, owner))
		f.expectMember(owner)
	})

	t.Run("Update of a missing or another team's membership is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.owner(storeID("tm"))
		f.createMembers(m)

		foreign := m
		foreign.TeamID, foreign.Role = storeID("tm"), team.RoleViewer
		expectNotFound(t, "Update through another team", f.s.Memberships().Update(f.ctx, foreign))
		f.expectMember(m)
		_, err := f.s.Memberships().ByID(f.ctx, foreign.TeamID, m.ID)
		expectNotFound(t, "ByID in the other team after Update", err)

		missing := f.owner(m.TeamID)
		expectNotFound(t, "Update of an unknown id", f.s.Memberships().Update(f.ctx, missing))
		_, err = f.s.Memberships().ByID(f.ctx, m.TeamID, missing.ID)
		expectNotFound(t, "ByID of the unknown id after Update", err)
	})

	// Ids are created in order; insertion order is made to disagree with
	// them, and another team's members are interleaved.
	t.Run("List pages a team's members, newest first, every status", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, otherTeam := storeID("tm"), storeID("tm")
		statuses := []team.Status{team.StatusActive, team.StatusInvited, team.StatusRemoved}
		const n = 25
		all := make([]team.Member, n)
		for i := range all {
			all[i] = f.member(teamID, team.RoleMember, statuses[i%len(statuses)])
		}
		for i := range n {
			m := all[(i*7)%n]
			f.createMembers(m, f.member(otherTeam, team.RoleMember, team.StatusActive))
		}
		want := memberIDs(all)
		slices.Reverse(want)

		var seen []string
		before := ""
		for page := 0; ; page++ {
			if page > n {
				t.Fatal("List never reached an empty page")
			}
			got, err := f.s.Memberships().List(f.ctx, teamID, before, 10)
			f.must("List", err)
			if len(got) == 0 {
				break
			}
			if len(got) > 10 {
				t.Fatalf("page %d holds %d members, want at most 10", page, len(got))
			}
			seen = append(seen, memberIDs(got)...)
			before = got[len(got)-1].ID
		}
		checkIDs(t, "pages of List", seen, want)

		first, err := f.s.Memberships().List(f.ctx, teamID, "", 3)
		f.must("List", err)
		if len(first) == 3 {
			checkEqual(t, "member", first[0], all[n-1])
			checkEqual(t, "member", first[1], all[n-2])
			checkEqual(t, "member", first[2], all[n-3])
		}
		for _, limit := range []int{0, -1} {
			got, err := f.s.Memberships().List(f.ctx, teamID, "", limit)
			f.must("List without a limit", err)
			if len(got) != 0 {
				t.Fatalf("List with limit %d returned %d members, want none", limit, len(got))
			}
		}
		none, err := f.s.Memberships().List(f.ctx, storeID("tm"), "", 10)
		f.must("List of a team without members", err)
		if len(none) != 0 {
			t.Fatalf("List of a team without members returned %d", len(none))
		}
	})

	// Byte order puts upper case before "_" and "_" before lower case; a
	// linguistic collation would sort these ids otherwise.
	t.Run("List orders ids bytewise", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, base := storeID("tm"), storeID("mem")
		var ms []team.Member
		for _, suffix := range []string{"a", "_", "Z", "B", "b"} {
			m := f.member(teamID, team.RoleMember, team.StatusActive)
			m.ID = base + suffix
			ms = append(ms, m)
		}
		f.createMembers(ms...)
		want := []string{base + "b", base + "a", base + "_", base + "Z", base + "B"}
		got, err := f.s.Memberships().List(f.ctx, teamID, "", 10)
		f.must("List", err)
		checkIDs(t, "List", memberIDs(got), want)
		got, err = f.s.Memberships().List(f.ctx, teamID, base+"_", 10)
		f.must("List before "+base+"_", err)
		checkIDs(t, "List before "+base+"_", memberIDs(got), want[3:])
	})

	t.Run("Count counts active members and active owners", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID := storeID("tm")
		f.createMembers(
			f.owner(teamID),
			f.owner(teamID),
			f.member(teamID, team.RoleAdmin, team.StatusActive),
			f.member(teamID, team.RoleViewer, team.StatusActive),
			f.member(teamID, team.RoleOwner, team.StatusInvited),
			f.member(teamID, team.RoleOwner, team.StatusRemoved),
			f.member(teamID, team.RoleMember, team.StatusRemoved),
			f.invited(teamID, "pending-"+storeID("n")+"@example.com"),
			f.owner(storeID("tm")),
		)
		if active, owners := f.count(teamID); active != 4 || owners != 2 {
			t.Fatalf("Count = %d active, %d owners; want 4, 2", active, owners)
		}
		if active, owners := f.count(storeID("tm")); active != 0 || owners != 0 {
			t.Fatalf("Count of a team without members = %d, %d; want 0, 0", active, owners)
		}
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.owner(storeID("tm"))
		want := m
		want.JoinedAt = storePtr(*m.JoinedAt)
		f.createMembers(m)

		got, err := f.s.Memberships().ByID(f.ctx, m.TeamID, m.ID)
		f.must("ByID", err)
		*got.JoinedAt = storeAt(98 * time.Hour)
		got, err = f.s.Memberships().ByEmail(f.ctx, m.TeamID, m.Email)
		f.must("ByEmail", err)
		*got.JoinedAt = storeAt(97 * time.Hour)
		list, err := f.s.Memberships().List(f.ctx, m.TeamID, "", 10)
		f.must("List", err)
		*list[0].JoinedAt = storeAt(96 * time.Hour)

		update := want
		update.JoinedAt = storePtr(*want.JoinedAt)
		f.must("Update", f.s.Memberships().Update(f.ctx, update))
		*update.JoinedAt = storeAt(95 * time.Hour)

		f.expectMember(want)
	})
}

// runTeamLock checks Teams().Lock: its not-found error, and that it makes
// units which count a team's owners and then demote one run one at a time.
func runTeamLock(t *testing.T, newStore NewStore) {
	t.Run("Lock of an existing team succeeds, in a unit or not", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		tm := f.team()
		f.must("Create", f.s.Teams().Create(f.ctx, tm))
		f.must("Lock", f.s.Teams().Lock(f.ctx, tm.ID))
		f.must("Do", inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.Teams().Lock(ctx, tm.ID); err != nil {
				return err
			}
			// Locking twice in one unit does not wait for itself.
			return tx.Teams().Lock(ctx, tm.ID)
		}))
	})

	t.Run("Lock of a missing team is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		expectNotFound(t, "Lock of an unknown id", f.s.Teams().Lock(f.ctx, storeID("tm")))
		created := f.team()
		err := inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.Teams().Create(ctx, created); err != nil {
				return err
			}
			if err := tx.Teams().Lock(ctx, created.ID); err != nil {
				return fmt.Errorf("lock of a team created in the unit: %w", err)
			}
			return tx.Teams().Lock(ctx, storeID("tm"))
		})
		expectNotFound(t, "Lock of an unknown id in a unit", err)
		_, err = f.s.Teams().ByID(f.ctx, created.ID)
		expectNotFound(t, "team of the failed unit", err)
	})

	// Two owners each demote the other in units released together. Each unit
	// counts the owners after taking the lock and demotes only while there
	// are two, so the second unit to take the lock must see the first's
	// demotion: the team keeps one owner. Without the lock, PostgreSQL's READ
	// COMMITTED lets both units count two owners and demote both.
	t.Run("Lock makes units counting owners run one at a time", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		for round := range lockRounds {
			tm := f.team()
			f.must("create team", f.s.Teams().Create(f.ctx, tm))
			owners := []team.Member{f.owner(tm.ID), f.owner(tm.ID)}
			f.createMembers(owners...)

			var errs []error
			storeWithin(t, "units locking one team", func() {
				errs = runConcurrently(len(owners), func(i int) error {
					return inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
						if err := tx.Teams().Lock(ctx, tm.ID); err != nil {
							return fmt.Errorf("lock: %w", err)
						}
						_, n, err := tx.Memberships().Count(ctx, tm.ID)
						if err != nil {
							return fmt.Errorf("count: %w", err)
						}
						if n < 2 {
							return nil
						}
						demoted := owners[len(owners)-1-i]
						demoted.Role = team.RoleAdmin
						return tx.Memberships().Update(ctx, demoted)
					})
				})
			})
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			active, n := f.count(tm.ID)
			if n < 1 {
				t.Fatalf("round %d: no owner remains: both units counted two owners and each demoted one", round)
			}
			if n != 1 || active != 2 {
				t.Fatalf("round %d: Count = %d active, %d owners; want 2, 1", round, active, n)
			}
		}
	})
}

func runInvitationRepository(t *testing.T, newStore NewStore) {
	t.Run("create then ByID", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		inv := f.invitation(storeID("tm"), storeID("mem"), "guest-"+storeID("n")+"@example.com")
		inv.CreatedAt = inv.CreatedAt.In(storeZone)
		used := f.invitation(inv.TeamID, storeID("mem"), "used-"+storeID("n")+"@example.com")
		used.Hash = storeHash(201)
		used.UsedAt = storePtr(storeAt(time.Minute))
		f.must("Create", f.s.Invitations().Create(f.ctx, inv))
		f.must("Create used", f.s.Invitations().Create(f.ctx, used))

		got, err := f.s.Invitations().ByID(f.ctx, inv.ID)
		f.must("ByID", err)
		checkEqual(t, "invitation", got, inv)
		got, err = f.s.Invitations().ByID(f.ctx, used.ID)
		f.must("ByID used", err)
		checkEqual(t, "invitation", got, used)
	})

	t.Run("CountSince counts the team's invitations after since, and one membership's", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		teamID, memberID := storeID("tm"), storeID("mem")
		at := func(inv team.Invitation, created time.Duration) team.Invitation {
			inv.CreatedAt = storeAt(created).In(storeZone)
			return inv
		}
		for _, inv := range []team.Invitation{
			at(f.invitation(teamID, memberID, "a@example.com"), -time.Hour), // before the window
			at(f.invitation(teamID, memberID, "a@example.com"), 0),          // at since: outside
			at(f.invitation(teamID, memberID, "a@example.com"), time.Minute),
			at(f.invitation(teamID, memberID, "a@example.com"), 3*time.Minute),
			at(f.invitation(teamID, storeID("mem"), "b@example.com"), 2*time.Second),
			at(f.invitation(storeID("tm"), memberID, "c@example.com"), time.Second), // another team
		} {
			f.must("Create", f.s.Invitations().Create(f.ctx, inv))
		}
		got, err := f.s.Invitations().CountSince(f.ctx, teamID, memberID, storeAt(0))
		f.must("CountSince", err)
		want := teamstore.InvitationCounts{Team: 3, Member: 2, TeamOldest: storeAt(2 * time.Second), MemberOldest: storeAt(time.Minute)}
		checkEqual(t, "counts", got, want)
		got, err = f.s.Invitations().CountSince(f.ctx, storeID("tm"), memberID, storeAt(0))
		f.must("CountSince of a team without invitations", err)
		checkEqual(t, "counts", got, teamstore.InvitationCounts{})
	})

	t.Run("missing invitation is not found", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		_, err := f.s.Invitations().ByID(f.ctx, storeID("inv"))
		expectNotFound(t, "ByID of an unknown id", err)
	})

	t.Run("taken id is a conflict", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		inv := f.invitation(storeID("tm"), storeID("mem"), "a@example.com")
		f.must("Create", f.s.Invitations().Create(f.ctx, inv))
		again := f.invitation(storeID("tm"), storeID("mem"), "b@example.com")
		again.ID = inv.ID
		expectConflict(t, "Create with the same id", f.s.Invitations().Create(f.ctx, again))
		got, err := f.s.Invitations().ByID(f.ctx, inv.ID)
		f.must("ByID", err)
		checkEqual(t, "invitation", got, inv)
	})

	runConsume(t, newStore, singleUseRecords[team.Invitation]{
		what: "invitation",
		repo: func(s storage.Store) singleUse[team.Invitation] { return s.Invitations() },
		pair: func(f storeFixture) (team.Invitation, team.Invitation) {
			inv := f.invitation(storeID("tm"), storeID("mem"), "a@example.com")
			return inv, f.invitation(inv.TeamID, storeID("mem"), "b@example.com")
		},
		id: func(inv team.Invitation) string { return inv.ID },
		used: func(inv team.Invitation, at time.Time) team.Invitation {
			inv.UsedAt = &at
			return inv
		},
	})

	// As accepting an invitation does: a new invitation, the membership made
	// active and the old invitation consumed, then a failure.
	t.Run("a failed unit leaves neither its invitations nor its membership update", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		m := f.invited(storeID("tm"), "rollback-"+storeID("n")+"@example.com")
		f.createMembers(m)
		old := f.invitation(m.TeamID, m.ID, m.Email)
		f.must("Create invitation", f.s.Invitations().Create(f.ctx, old))
		created := f.invitation(m.TeamID, m.ID, m.Email)

		active, err := m.Accept(storeID("usr"), storeAt(time.Hour))
		f.must("Accept", err)
		err = inUnit(f.ctx, f.s, func(ctx context.Context, tx storage.Store) error {
			if err := tx.Invitations().Create(ctx, created); err != nil {
				return err
			}
			if ok, err := tx.Invitations().Consume(ctx, old.ID, storeAt(time.Hour)); err != nil || !ok {
				return fmt.Errorf("consume: %v, %w", ok, err)
			}
			if err := tx.Memberships().Update(ctx, active); err != nil {
				return err
			}
			if _, owners, err := tx.Memberships().Count(ctx, m.TeamID); err != nil || owners != 0 {
				return fmt.Errorf("count inside the unit: %d owners, %w", owners, err)
			}
			return errUnitFailed
		})
		if !errors.Is(err, errUnitFailed) {
			t.Fatalf("Do returned %v, want the error fn returned", err)
		}

		_, err = f.s.Invitations().ByID(f.ctx, created.ID)
		expectNotFound(t, "invitation created by the failed unit", err)
		got, err := f.s.Invitations().ByID(f.ctx, old.ID)
		f.must("ByID of the old invitation", err)
		checkEqual(t, "invitation", got, old)
		f.expectMember(m)
		_, err = f.s.Memberships().ByUser(f.ctx, m.TeamID, active.UserID)
		expectNotFound(t, "ByUser of the user the failed unit made a member", err)
		if n, _ := f.count(m.TeamID); n != 0 {
			t.Fatalf("Count after the failed unit: %d active members, want 0", n)
		}

		// The same writes succeed afterwards.
		ok, err := f.s.Invitations().Consume(f.ctx, old.ID, storeAt(time.Hour))
		if err != nil || !ok {
			t.Fatalf("Consume after the failed unit: %v, %v", ok, err)
		}
		f.must("Update after the failed unit", f.s.Memberships().Update(f.ctx, active))
		f.expectMember(active)
	})

	t.Run("returned values are copies", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		inv := f.invitation(storeID("tm"), storeID("mem"), "a@example.com")
		inv.UsedAt = storePtr(storeAt(time.Second))
		want := inv
		want.Hash = append([]byte(nil), inv.Hash...)
		want.UsedAt = storePtr(*inv.UsedAt)
		f.must("Create", f.s.Invitations().Create(f.ctx, inv))
		inv.Hash[0] ^= 0xff
		*inv.UsedAt = storeAt(99 * time.Hour)

		got, err := f.s.Invitations().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		got.Hash[0] ^= 0xff
		*got.UsedAt = storeAt(98 * time.Hour)

		got, err = f.s.Invitations().ByID(f.ctx, want.ID)
		f.must("ByID", err)
		checkEqual(t, "invitation", got, want)
	})
}
