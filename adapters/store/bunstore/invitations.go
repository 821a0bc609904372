package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/teamstore"
)

type invitationRow struct {
	bun.BaseModel `bun:"table:invitations,alias:inv"`

	ID        string     `bun:"id,pk"`
	TeamID    string     `bun:"team_id"`
	MemberID  string     `bun:"member_id"`
	Email     string     `bun:"email"`
	Hash      []byte     `bun:"hash"`
	CreatedAt time.Time  `bun:"created_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
}

func newInvitationRow(inv team.Invitation) *invitationRow {
	return &invitationRow{
		ID:        inv.ID,
		TeamID:    inv.TeamID,
		MemberID:  inv.MemberID,
		Email:     inv.Email,
		Hash:      inv.Hash,
		CreatedAt: utc(inv.CreatedAt),
		ExpiresAt: utc(inv.ExpiresAt),
		UsedAt:    utcPtr(inv.UsedAt),
	}
}

func (r *invitationRow) invitation() team.Invitation {
	return team.Invitation{
		ID:        r.ID,
		TeamID:    r.TeamID,
		MemberID:  r.MemberID,
		Email:     r.Email,
		Hash:      r.Hash,
		CreatedAt: utc(r.CreatedAt),
		ExpiresAt: utc(r.ExpiresAt),
		UsedAt:    utcPtr(r.UsedAt),
	}
}

type invitationRepository struct{ db *bun.DB }

func (r invitationRepository) Create(ctx context.Context, inv team.Invitation) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newInvitationRow(inv)).Exec(ctx); err != nil {
		return writeErr(err, "invitation", "invitation already exists")
	}
	return nil
}

func (r invitationRepository) ByID(ctx context.Context, id string) (team.Invitation, error) {
	var row invitationRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return team.Invitation{}, readErr(err, "invitation")
	}
	return row.invitation(), nil
}

// CountSince reads the team's recent invitations through the index on
// (team_id, created_at).
func (r invitationRepository) CountSince(ctx context.Context, teamID, memberID string, since time.Time) (teamstore.InvitationCounts, error) {
	var (
		c                     teamstore.InvitationCounts
		teamOldest, memOldest bun.NullTime
	)
	err := conn(ctx, r.db).NewSelect().Model((*invitationRow)(nil)).
		ColumnExpr("count(*)").
		ColumnExpr("min(created_at)").
		ColumnExpr("count(CASE WHEN member_id = ? THEN 1 END)", memberID).
		ColumnExpr("min(CASE WHEN member_id = ? THEN created_at END)", memberID).
		Where("team_id = ?", teamID).
		Where("created_at > ?", utc(since)).
		Scan(ctx, &c.Team, &teamOldest, &c.Member, &memOldest)
	if err != nil {
		return teamstore.InvitationCounts{}, readErr(err, "invitations")
	}
	if !teamOldest.IsZero() {
		c.TeamOldest = utc(teamOldest.Time)
	}
	if !memOldest.IsZero() {
		c.MemberOldest = utc(memOldest.Time)
	}
	return c, nil
}

// Consume: see refreshTokenRepository.Consume.
func (r invitationRepository) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := conn(ctx, r.db).NewUpdate().Model((*invitationRow)(nil)).
		Set("used_at = ?", utc(at)).
		Where("id = ?", id).
		Where("used_at IS NULL").
		Exec(ctx)
	return consumed(ctx, conn(ctx, r.db), res, err, (*invitationRow)(nil), id, "invitation")
}

// Invitations returns the invitation repository.
func (s *Store) Invitations() teamstore.Invitations { return invitationRepository{db: s.db} }
