package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/teamstore"
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

type teamRepository struct{ db *bun.DB }

func (r teamRepository) Create(ctx context.Context, t team.Team) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newTeamRow(t)).Exec(ctx); err != nil {
		return writeErr(err, "team", "team already exists")
	}
	return nil
}

func (r teamRepository) ByID(ctx context.Context, id string) (team.Team, error) {
	var row teamRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return team.Team{}, readErr(err, "team")
	}
	return row.team(), nil
}

// Lock takes the team row's lock in PostgreSQL, which a second unit locking
// the same team waits for until the first commits or rolls back. SQLite
// needs none: one connection and _txlock=immediate make every transaction
// hold the database's write lock from BEGIN, so units already run one at a
// time; there Lock only checks that the team exists.
func (r teamRepository) Lock(ctx context.Context, id string) error {
	q := conn(ctx, r.db).NewSelect().Model((*teamRow)(nil)).Column("id").Where("id = ?", id)
	if conn(ctx, r.db).Dialect().Name() == dialect.PG {
		// NO KEY UPDATE: lockers wait for each other, but rows that refer
		// to the team (whose inserts take KEY SHARE on it) do not wait.
		q = q.For("NO KEY UPDATE")
	}
	var locked string
	if err := q.Scan(ctx, &locked); err != nil {
		return readErr(err, "team")
	}
	return nil
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

type membershipRepository struct{ db *bun.DB }

func (r membershipRepository) Create(ctx context.Context, m team.Member) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newMembershipRow(m)).Exec(ctx); err != nil {
		return writeErr(err, "membership", "user or email is already a member of this team")
	}
	return nil
}

// ByUser finds no membership for the empty user id: that is the user id of
// every member still waiting for an account, not a user.
func (r membershipRepository) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	if userID == "" {
		return team.Member{}, domain.NotFound("membership")
	}
	return r.one(ctx, conn(ctx, r.db).NewSelect().
		Where("team_id = ?", teamID).
		Where("user_id = ?", userID))
}

// ListByUser lists nothing for the empty user id, as ByUser finds nothing.
func (r membershipRepository) ListByUser(ctx context.Context, userID string) ([]team.Member, error) {
	if userID == "" {
		return []team.Member{}, nil
	}
	var rows []membershipRow
	err := conn(ctx, r.db).NewSelect().Model(&rows).
		Where("user_id = ?", userID).
		OrderExpr("invited_at ASC, id ASC").
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "memberships")
	}
	return members(rows), nil
}

func (r membershipRepository) ByID(ctx context.Context, teamID, id string) (team.Member, error) {
	return r.one(ctx, conn(ctx, r.db).NewSelect().
		Where("team_id = ?", teamID).
		Where("id = ?", id))
}

// ByEmail uses the expression of the unique index on (team_id, lower(email)).
func (r membershipRepository) ByEmail(ctx context.Context, teamID, email string) (team.Member, error) {
	return r.one(ctx, conn(ctx, r.db).NewSelect().
		Where("team_id = ?", teamID).
		Where("lower(email) = lower(?)", email))
}

// one scans the single membership q selects; q has its conditions but no
// model yet.
func (r membershipRepository) one(ctx context.Context, q *bun.SelectQuery) (team.Member, error) {
	var row membershipRow
	if err := q.Model(&row).Scan(ctx); err != nil {
		return team.Member{}, readErr(err, "membership")
	}
	return row.member(), nil
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit". In PostgreSQL memberships.id has the "C" collation, so ids compare
// and sort bytewise there as in SQLite and the memory store.
func (r membershipRepository) List(ctx context.Context, teamID, beforeID string, limit int) ([]team.Member, error) {
	if limit < 1 {
		return []team.Member{}, nil
	}
	var rows []membershipRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).Where("team_id = ?", teamID)
	if beforeID != "" {
		q = q.Where("id < ?", beforeID)
	}
	if err := q.OrderExpr("id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "memberships")
	}
	return members(rows), nil
}

// membershipUpdateColumns are what Update replaces.
var membershipUpdateColumns = []string{"user_id", "role", "status", "joined_at"}

// Update is one UPDATE by team and id; the partial unique index on
// (team_id, user_id) refuses a user who is already a member.
func (r membershipRepository) Update(ctx context.Context, m team.Member) error {
	res, err := conn(ctx, r.db).NewUpdate().Model(newMembershipRow(m)).
		Column(membershipUpdateColumns...).
		Where("team_id = ?", m.TeamID).
		Where("id = ?", m.ID).
		Exec(ctx)
	if err != nil {
		return writeErr(err, "membership", "user is already a member of this team")
	}
	return touchedOne(res, nil, "membership")
}

// Count counts in one query; count() skips the NULL of a non-owner.
func (r membershipRepository) Count(ctx context.Context, teamID string) (active, owners int, err error) {
	err = conn(ctx, r.db).NewSelect().Model((*membershipRow)(nil)).
		ColumnExpr("count(*)").
		ColumnExpr("count(CASE WHEN role = ? THEN 1 END)", string(team.RoleOwner)).
		Where("team_id = ?", teamID).
		Where("status = ?", string(team.StatusActive)).
		Scan(ctx, &active, &owners)
	if err != nil {
		return 0, 0, readErr(err, "memberships")
	}
	return active, owners, nil
}

func members(rows []membershipRow) []team.Member {
	out := make([]team.Member, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].member())
	}
	return out
}

// Teams returns the team repository.
func (s *Store) Teams() teamstore.Teams { return teamRepository{db: s.db} }

// Memberships returns the membership repository.
func (s *Store) Memberships() teamstore.Memberships { return membershipRepository{db: s.db} }
