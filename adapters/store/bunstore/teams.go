package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/team"
)

type teamRow struct {
	bun.BaseModel `bun:"table:teams,alias:t"`

	ID        string    `bun:"id,pk"`
	Name      string    `bun:"name"`
	CreatedAt time.Time `bun:"created_at"`
}

func newTeamRow(t team.Team) *teamRow {
	return &teamRow{ID: t.ID, Name: t.Name, CreatedAt: utc(t.CreatedAt)}
}

func (r *teamRow) team() team.Team {
	return team.Team{ID: r.ID, Name: r.Name, CreatedAt: utc(r.CreatedAt)}
}

type teamRepository struct{ db bun.IDB }

func (r teamRepository) Create(ctx context.Context, t team.Team) error {
	if _, err := r.db.NewInsert().Model(newTeamRow(t)).Exec(ctx); err != nil {
		return writeErr(err, "team", "team already exists")
	}
	return nil
}

func (r teamRepository) ByID(ctx context.Context, id string) (team.Team, error) {
	var row teamRow
	if err := r.db.NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return team.Team{}, readErr(err, "team")
	}
	return row.team(), nil
}

type membershipRow struct {
	bun.BaseModel `bun:"table:memberships,alias:m"`

	ID        string     `bun:"id,pk"`
	TeamID    string     `bun:"team_id"`
	UserID    string     `bun:"user_id"`
	Email     string     `bun:"email"`
	Role      string     `bun:"role"`
	Status    string     `bun:"status"`
	InvitedAt time.Time  `bun:"invited_at"`
	JoinedAt  *time.Time `bun:"joined_at"`
}

func newMembershipRow(m team.Member) *membershipRow {
	return &membershipRow{
		ID:        m.ID,
		TeamID:    m.TeamID,
		UserID:    m.UserID,
		Email:     m.Email,
		Role:      string(m.Role),
		Status:    string(m.Status),
		InvitedAt: utc(m.InvitedAt),
		JoinedAt:  utcPtr(m.JoinedAt),
	}
}

func (r *membershipRow) member() team.Member {
	return team.Member{
		ID:        r.ID,
		TeamID:    r.TeamID,
		UserID:    r.UserID,
		Email:     r.Email,
		Role:      team.Role(r.Role),
		Status:    team.Status(r.Status),
		InvitedAt: utc(r.InvitedAt),
		JoinedAt:  utcPtr(r.JoinedAt),
	}
}

type membershipRepository struct{ db bun.IDB }

func (r membershipRepository) Create(ctx context.Context, m team.Member) error {
	if _, err := r.db.NewInsert().Model(newMembershipRow(m)).Exec(ctx); err != nil {
		return writeErr(err, "membership", "user is already a member of this team")
	}
	return nil
}

func (r membershipRepository) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	var row membershipRow
	err := r.db.NewSelect().Model(&row).
		Where("team_id = ?", teamID).
		Where("user_id = ?", userID).
		Scan(ctx)
	if err != nil {
		return team.Member{}, readErr(err, "membership")
	}
	return row.member(), nil
}

func (r membershipRepository) ListByUser(ctx context.Context, userID string) ([]team.Member, error) {
	var rows []membershipRow
	err := r.db.NewSelect().Model(&rows).
		Where("user_id = ?", userID).
		OrderExpr("invited_at ASC, id ASC").
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "memberships")
	}
	members := make([]team.Member, 0, len(rows))
	for i := range rows {
		members = append(members, rows[i].member())
	}
	return members, nil
}
