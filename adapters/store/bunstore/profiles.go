package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// profileRow is a profile with the first fields of its fingerprint in
// columns of their own and the rest in device (see deviceColumn). The
// session columns are all NULL while the profile is idle.
type profileRow struct {
	bun.BaseModel `bun:"table:profiles,alias:p"`

	ID           string    `bun:"id,pk"`
	TeamID       string    `bun:"team_id"`
	Name         string    `bun:"name"`
	TemplateID   string    `bun:"template_id"`
	Browser      string    `bun:"browser"`
	UserAgent    string    `bun:"user_agent"`
	Platform     string    `bun:"platform"`
	Locale       string    `bun:"locale"`
	Timezone     string    `bun:"timezone"`
	ScreenWidth  int       `bun:"screen_width"`
	ScreenHeight int       `bun:"screen_height"`
	Device       string    `bun:"device,notnull"`
	ProxyID      string    `bun:"proxy_id,nullzero"` // "" (no proxy) is NULL
	Notes        string    `bun:"notes"`
	Version      int       `bun:"version"`
	CreatedBy    string    `bun:"created_by"`
	CreatedAt    time.Time `bun:"created_at"`
	UpdatedAt    time.Time `bun:"updated_at"`

	SessionID         *string    `bun:"session_id"`
	SessionStartedAt  *time.Time `bun:"session_started_at"`
	SessionExpiresAt  *time.Time `bun:"session_expires_at"`
	SessionLaunchedBy *string    `bun:"session_launched_by"`
	SessionHeadless   *bool      `bun:"session_headless"`
	SessionCDPURL     *string    `bun:"session_cdp_url"`
	SessionTokenHash  *string    `bun:"session_cdp_token_hash"`
	SessionNode       *string    `bun:"session_node"`

	DataSHA256    *string    `bun:"data_sha256"`
	DataSize      *int64     `bun:"data_size"`
	DataUpdatedAt *time.Time `bun:"data_updated_at"`
	CookiesSHA256 *string    `bun:"cookies_sha256"`
	CookiesSize   *int64     `bun:"cookies_size"`

	// Tags is the profile's tags as a JSON array, in their order.
	// profile_tags holds them too, as the index a filter by tag reads; every
	// write of the profile writes both.
	Tags string `bun:"tags,notnull"`

	// Read with the row by selectProfiles, so that a profile with its
	// proxy's view is one query: the proxy's columns (NULL without one).
	ProxyType *string `bun:"proxy_type,scanonly"`
	ProxyHost *string `bun:"proxy_host,scanonly"`
	ProxyPort *int    `bun:"proxy_port,scanonly"`
}

// profileSettingsColumns are what Update replaces: everything but the
// identity, the creation and the session.
var profileSettingsColumns = []string{
	"name", "template_id", "browser", "user_agent", "platform", "locale", "timezone", "tags",
	"screen_width", "screen_height", "device", "proxy_id", "notes", "version", "updated_at",
	"data_sha256", "data_size", "data_updated_at", "cookies_sha256", "cookies_size",
}

// profileSessionColumns are what SwapSession sets.
var profileSessionColumns = []string{
	"session_id", "session_started_at", "session_expires_at",
	"session_launched_by", "session_headless", "session_cdp_url",
	"session_cdp_token_hash", "session_node",
}

func newProfileRow(p profile.Profile) *profileRow {
	row := &profileRow{
		ID:           p.ID,
		TeamID:       p.TeamID,
		Name:         p.Name,
		TemplateID:   p.TemplateID,
		Browser:      p.Browser,
		UserAgent:    p.Fingerprint.UserAgent,
		Platform:     p.Fingerprint.Platform,
		Locale:       p.Fingerprint.Locale,
		Timezone:     p.Fingerprint.Timezone,
		ScreenWidth:  p.Fingerprint.Screen.Width,
		ScreenHeight: p.Fingerprint.Screen.Height,
		Device:       deviceJSON(p.Fingerprint),
		ProxyID:      p.ProxyID,
		Notes:        p.Notes,
		Version:      p.Version,
		CreatedBy:    p.CreatedBy,
		CreatedAt:    utc(p.CreatedAt),
		UpdatedAt:    utc(p.UpdatedAt),
		Tags:         tagsJSON(p.Tags),
	}
	row.setSession(p.Session)
	if d := p.Data; d != nil {
		sha, size := d.SHA256, d.Size
		row.DataSHA256, row.DataSize, row.DataUpdatedAt = &sha, &size, utcPtr(&d.UpdatedAt)
	}
	row.CookiesSHA256, row.CookiesSize = contentColumns(p.Cookies)
	return row
}

// tagsJSON is the tags column of tags: a JSON array, [] for none.
func tagsJSON(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	raw, err := json.Marshal(tags)
	if err != nil { // a []string always encodes
		panic(err)
	}
	return string(raw)
}

// contentColumns are the sha256 and size columns of c, both NULL for nil.
func contentColumns(c *profile.Content) (*string, *int64) {
	if c == nil {
		return nil, nil
	}
	sha, size := c.SHA256, c.Size
	return &sha, &size
}

// content reads the sha256 and size columns back: nil when sha is NULL.
func content(sha *string, size *int64) *profile.Content {
	if sha == nil {
		return nil
	}
	c := &profile.Content{SHA256: *sha}
	if size != nil {
		c.Size = *size
	}
	return c
}

// setSession fills the session columns from s, or sets them NULL for nil.
func (r *profileRow) setSession(s *profile.Session) {
	if s == nil {
		r.SessionID, r.SessionStartedAt, r.SessionExpiresAt = nil, nil, nil
		r.SessionLaunchedBy, r.SessionHeadless, r.SessionCDPURL = nil, nil, nil
		r.SessionTokenHash, r.SessionNode = nil, nil
		return
	}
	id, launchedBy, headless, cdpURL := s.ID, s.LaunchedBy, s.Headless, s.CDPURL
	tokenHash, node := s.CDPTokenHash, s.Node
	r.SessionTokenHash, r.SessionNode = &tokenHash, &node
	r.SessionID = &id
	r.SessionStartedAt = utcPtr(&s.StartedAt)
	r.SessionExpiresAt = utcPtr(&s.ExpiresAt)
	r.SessionLaunchedBy = &launchedBy
	r.SessionHeadless = &headless
	r.SessionCDPURL = &cdpURL
}

// profile converts a row read by selectProfiles.
func (r *profileRow) profile() (profile.Profile, error) {
	p, err := r.summary()
	if err != nil {
		return profile.Profile{}, err
	}
	p.Fingerprint, err = withDevice(p.Fingerprint, r.Device, r.TemplateID, r.ID)
	if err != nil {
		return profile.Profile{}, err
	}
	return p, nil
}

// summary converts a row read with or without its device column: the
// fingerprint has its six columns only (profile.Fingerprint.Summary).
func (r *profileRow) summary() (profile.Profile, error) {
	tags := []string{}
	if r.Tags != "" && r.Tags != "[]" {
		if err := json.Unmarshal([]byte(r.Tags), &tags); err != nil {
			return profile.Profile{}, fmt.Errorf("bunstore: read profile tags: %w", err)
		}
	}
	return profile.Profile{
		ID:         r.ID,
		TeamID:     r.TeamID,
		Name:       r.Name,
		TemplateID: r.TemplateID,
		Browser:    r.Browser,
		Fingerprint: profile.Fingerprint{
			UserAgent: r.UserAgent,
			Platform:  r.Platform,
			Locale:    r.Locale,
			Timezone:  r.Timezone,
			Screen:    profile.Screen{Width: r.ScreenWidth, Height: r.ScreenHeight},
		},
		ProxyID:   r.ProxyID,
		Proxy:     r.proxy(),
		Tags:      tags,
		Notes:     r.Notes,
		Session:   r.session(),
		Data:      r.data(),
		Cookies:   content(r.CookiesSHA256, r.CookiesSize),
		Version:   r.Version,
		CreatedBy: r.CreatedBy,
		CreatedAt: utc(r.CreatedAt),
		UpdatedAt: utc(r.UpdatedAt),
	}, nil
}

// proxy is the view of the profile's proxy: by its id alone when the proxy
// row is gone.
func (r *profileRow) proxy() *profile.ProxyRef {
	if r.ProxyID == "" {
		return nil
	}
	ref := &profile.ProxyRef{ID: r.ProxyID}
	if r.ProxyType != nil && r.ProxyHost != nil && r.ProxyPort != nil {
		ref.Type, ref.Host, ref.Port = *r.ProxyType, *r.ProxyHost, *r.ProxyPort
	}
	return ref
}

// data reads the data columns back: nil when data_sha256 is NULL.
func (r *profileRow) data() *profile.Data {
	c := content(r.DataSHA256, r.DataSize)
	if c == nil {
		return nil
	}
	d := &profile.Data{Content: *c}
	if r.DataUpdatedAt != nil {
		d.UpdatedAt = utc(*r.DataUpdatedAt)
	}
	return d
}

func (r *profileRow) session() *profile.Session {
	if r.SessionID == nil {
		return nil
	}
	s := &profile.Session{ID: *r.SessionID}
	if r.SessionStartedAt != nil {
		s.StartedAt = utc(*r.SessionStartedAt)
	}
	if r.SessionExpiresAt != nil {
		s.ExpiresAt = utc(*r.SessionExpiresAt)
	}
	if r.SessionLaunchedBy != nil {
		s.LaunchedBy = *r.SessionLaunchedBy
	}
	if r.SessionHeadless != nil {
		s.Headless = *r.SessionHeadless
	}
	if r.SessionCDPURL != nil {
		s.CDPURL = *r.SessionCDPURL
	}
	if r.SessionTokenHash != nil {
		s.CDPTokenHash = *r.SessionTokenHash
	}
	if r.SessionNode != nil {
		s.Node = *r.SessionNode
	}
	return s
}

// profileTagRow is one tag of a profile; position keeps the profile's order.
type profileTagRow struct {
	bun.BaseModel `bun:"table:profile_tags,alias:pt"`

	ProfileID string `bun:"profile_id,pk"`
	TeamID    string `bun:"team_id"`
	Tag       string `bun:"tag,pk"`
	Position  int    `bun:"position"`
}

type profileRepository struct {
	db *bun.DB
}

// The view of the profile p's proxy, read with it.
const (
	proxyColumns = `px.type AS proxy_type, px.host AS proxy_host, px.port AS proxy_port`
	proxyJoin    = `LEFT JOIN proxies AS px ON px.id = p.proxy_id AND px.team_id = p.team_id`
)

// selectProfiles reads profiles into rows with their proxy's view in the
// same query: one round trip for a profile or a page of them. Conditions
// must name the profile's columns with the alias p. The profile's columns
// are bun's model's, named (?TableColumns) so that the proxy's can follow.
func (r profileRepository) selectProfiles(db bun.IDB, rows any) *bun.SelectQuery {
	return db.NewSelect().Model(rows).
		ColumnExpr("?TableColumns").
		ColumnExpr(proxyColumns).
		Join(proxyJoin)
}

// one reads the single profile q selects.
func one(ctx context.Context, q *bun.SelectQuery, row *profileRow, what string) (profile.Profile, error) {
	if err := q.Scan(ctx); err != nil {
		return profile.Profile{}, readErr(err, what)
	}
	return row.profile()
}

// many converts the rows a selectProfiles query read.
func many(rows []profileRow) ([]profile.Profile, error) {
	out := make([]profile.Profile, 0, len(rows))
	for i := range rows {
		p, err := rows[i].profile()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Create inserts the profile and its tags, then counts it in its team's
// profile_count, in ctx's unit when it carries one.
func (r profileRepository) Create(ctx context.Context, p profile.Profile) (int, error) {
	var n int
	err := inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(newProfileRow(p)).Exec(ctx); err != nil {
			return writeErr(err, "profile", "profile already exists")
		}
		if err := insertProfileTags(ctx, tx, p); err != nil {
			return err
		}
		var err error
		n, err = countProfiles(ctx, tx, p.TeamID, 1)
		return err
	})
	return n, err
}

// countProfiles adds delta to the team's profile_count, the count that
// Count reads in one row where counting the team's profiles would read
// them all, and returns the count. The UPDATE holds the team row's lock
// until the unit ends, as Teams.Lock does: a team's creates and deletes
// count one after another. A missing team counts nothing.
func countProfiles(ctx context.Context, tx bun.Tx, teamID string, delta int) (int, error) {
	var n []int
	err := tx.NewUpdate().Table("teams").
		Set("profile_count = profile_count + ?", delta).
		Where("id = ?", teamID).
		Returning("profile_count").
		Scan(ctx, &n)
	if err != nil {
		return 0, fmt.Errorf("bunstore: count the team's profiles: %w", err)
	}
	if len(n) == 0 {
		return 0, nil
	}
	return n[0], nil
}

func (r profileRepository) ByID(ctx context.Context, teamID, id string) (profile.Profile, error) {
	var row profileRow
	q := r.selectProfiles(conn(ctx, r.db), &row).
		Where("p.team_id = ?", teamID).
		Where("p.id = ?", id)
	return one(ctx, q, &row, "profile")
}

// BySession looks the session up by its id, on the index of session ids.
func (r profileRepository) BySession(ctx context.Context, sessionID string) (profile.Profile, error) {
	var row profileRow
	q := r.selectProfiles(conn(ctx, r.db), &row).
		Where("p.session_id = ?", sessionID).
		Limit(1)
	return one(ctx, q, &row, "session")
}

// Count reads the team's profile_count, which Create and Delete keep; a
// missing team has none.
func (r profileRepository) Count(ctx context.Context, teamID string) (int, error) {
	var n int
	err := conn(ctx, r.db).NewSelect().Table("teams").Column("profile_count").Where("id = ?", teamID).Scan(ctx, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, readErr(err, "profiles")
	}
	return n, nil
}

// List returns nothing for a limit below one: bun reads LIMIT 0 as "no
// limit". A status other than idle or running matches nothing.
func (r profileRepository) List(ctx context.Context, teamID string, f profilestore.Filter) ([]profile.Profile, error) {
	if f.Limit < 1 {
		return []profile.Profile{}, nil
	}
	switch f.Status {
	case "", profile.StatusRunning, profile.StatusIdle:
	default:
		return []profile.Profile{}, nil
	}
	var rows []profileRow
	q := conn(ctx, r.db).NewSelect().Model(&rows).ExcludeColumn("device").
		ColumnExpr(proxyColumns).
		Join(proxyJoin).
		Where("p.team_id = ?", teamID)
	if f.BeforeID != "" {
		q = q.Where("p.id < ?", f.BeforeID)
	}
	if f.Query != "" {
		// Both sides are lowered by the database, so that the two agree on
		// what lower case is.
		q = q.Where(`lower(p.name) LIKE lower(?) ESCAPE '\'`, "%"+escapeLike(f.Query)+"%")
	}
	switch f.Status {
	case "":
	case profile.StatusRunning:
		q = q.Where("p.session_id IS NOT NULL")
	case profile.StatusIdle:
		q = q.Where("p.session_id IS NULL")
	}
	if f.Tag != "" {
		q = q.Where(tagFilter+" ?)", f.Tag)
	}
	if err := q.OrderExpr("p.id DESC").Limit(int64(f.Limit)).Scan(ctx); err != nil {
		return nil, readErr(err, "profiles")
	}
	out := make([]profile.Profile, 0, len(rows))
	for i := range rows {
		p, err := rows[i].summary()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// tagFilter, completed by the tag and ")", keeps the profiles with a tag.
const tagFilter = "EXISTS (SELECT 1 FROM profile_tags AS pt WHERE pt.profile_id = p.id AND pt.tag ="

// escapeLike makes s match itself literally in a LIKE pattern with ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Update is one UPDATE conditional on the version, so that of two writers
// that read one version only one can succeed.
func (r profileRepository) Update(ctx context.Context, p profile.Profile, expectVersion int) error {
	return r.update(ctx, p, expectVersion, false)
}

// UpdateIdle also requires session_id IS NULL in the same UPDATE, so that
// no session can start between the check and the write.
func (r profileRepository) UpdateIdle(ctx context.Context, p profile.Profile, expectVersion int) error {
	return r.update(ctx, p, expectVersion, true)
}

// update tells why it changed nothing by reading the profile back: missing,
// at another version, or (for idle) running.
func (r profileRepository) update(ctx context.Context, p profile.Profile, expectVersion int, idle bool) error {
	return inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model(newProfileRow(p)).
			Column(profileSettingsColumns...).
			Where("team_id = ?", p.TeamID).
			Where("id = ?", p.ID).
			Where("version = ?", expectVersion)
		if idle {
			q = q.Where("session_id IS NULL")
		}
		res, err := q.Exec(ctx)
		n, err := rowsAffected(res, err, "profile")
		if err != nil {
			return err
		}
		if n == 0 {
			return whyNotUpdated(ctx, tx, p.TeamID, p.ID, expectVersion, idle)
		}
		if _, err := tx.NewDelete().Model((*profileTagRow)(nil)).Where("profile_id = ?", p.ID).Exec(ctx); err != nil {
			return fmt.Errorf("bunstore: write profile tags: %w", err)
		}
		return insertProfileTags(ctx, tx, p)
	})
}

// whyNotUpdated is the error of a conditional update that matched no row:
// not found, precondition failed for another version, or else running when
// the update required an idle profile.
func whyNotUpdated(ctx context.Context, db bun.IDB, teamID, id string, expectVersion int, idle bool) error {
	var cur profileRow
	err := db.NewSelect().Model(&cur).Column("version", "session_id").
		Where("team_id = ?", teamID).
		Where("id = ?", id).
		Scan(ctx)
	if err != nil {
		return readErr(err, "profile")
	}
	if cur.Version != expectVersion || !idle {
		return domain.PreconditionFailed("the profile was changed since it was read")
	}
	return profile.ErrRunning
}

// Delete removes the profile only while it holds no session. It uncounts
// the profile first, so that it takes the team's lock before the
// profile's row, in the order of every unit that takes both (an
// assignment of a proxy, a restore).
func (r profileRepository) Delete(ctx context.Context, teamID, id string) error {
	return inTx(ctx, r.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := countProfiles(ctx, tx, teamID, -1); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*profileRow)(nil)).
			Where("team_id = ?", teamID).
			Where("id = ?", id).
			Where("session_id IS NULL").
			Exec(ctx)
		n, err := rowsAffected(res, err, "profile")
		if err != nil {
			return err
		}
		if n == 0 {
			if err := profileExists(ctx, tx, teamID, id); err != nil {
				return err
			}
			return profile.ErrRunning
		}
		if _, err := tx.NewDelete().Model((*profileTagRow)(nil)).Where("profile_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("bunstore: write profile tags: %w", err)
		}
		return nil
	})
}

// SwapSession is one conditional UPDATE, so the database decides which of
// concurrent swaps applies: PostgreSQL re-evaluates the condition on the row
// a concurrent swap has changed once that swap commits, and SQLite runs one
// writer at a time.
func (r profileRepository) SwapSession(ctx context.Context, teamID, id string, s profilestore.SessionSwap) (bool, error) {
	row := &profileRow{}
	row.setSession(s.Next)
	q := conn(ctx, r.db).NewUpdate().Model(row).
		Column(profileSessionColumns...).
		Where("team_id = ?", teamID).
		Where("id = ?", id)
	if s.ExpectSessionID == "" {
		q = q.Where("session_id IS NULL")
	} else {
		q = q.Where("session_id = ?", s.ExpectSessionID)
	}
	if s.ExpiredBy != nil {
		q = q.Where("session_expires_at <= ?", utc(*s.ExpiredBy))
	}
	res, err := q.Exec(ctx)
	n, err := rowsAffected(res, err, "profile session")
	if err != nil {
		return false, err
	}
	if n > 0 {
		return true, nil
	}
	if err := profileExists(ctx, conn(ctx, r.db), teamID, id); err != nil {
		return false, err
	}
	return false, nil
}

// ListExpiredSessions reads the partial index on session_expires_at.
func (r profileRepository) ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error) {
	if limit < 1 {
		return []profile.Profile{}, nil
	}
	var rows []profileRow
	err := r.selectProfiles(conn(ctx, r.db), &rows).
		Where("p.session_id IS NOT NULL").
		Where("p.session_expires_at <= ?", utc(now)).
		OrderExpr("p.session_expires_at ASC, p.id ASC").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "profiles")
	}
	return many(rows)
}

// ListNodeSessions runs once per start of an instance; the rows that hold
// a session are few (the partial index on session_expires_at has them).
func (r profileRepository) ListNodeSessions(ctx context.Context, node string, limit int) ([]profile.Profile, error) {
	if node == "" || limit < 1 {
		return []profile.Profile{}, nil
	}
	var rows []profileRow
	err := r.selectProfiles(conn(ctx, r.db), &rows).
		Where("p.session_id IS NOT NULL").
		Where("p.session_node = ?", node).
		OrderExpr("p.id ASC").
		Limit(int64(limit)).
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "profiles")
	}
	return many(rows)
}

// CountSessions reads the partial index on session_expires_at.
func (r profileRepository) CountSessions(ctx context.Context, now time.Time) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*profileRow)(nil)).
		Where("session_id IS NOT NULL").
		Where("session_expires_at > ?", utc(now)).
		Count(ctx)
	if err != nil {
		return 0, readErr(err, "profiles")
	}
	return int(n), nil
}

// profileExists returns nil when the team has the profile, and a not-found
// error when it has not.
func profileExists(ctx context.Context, db bun.IDB, teamID, id string) error {
	exists, err := db.NewSelect().Model((*profileRow)(nil)).
		Where("team_id = ?", teamID).
		Where("id = ?", id).
		Exists(ctx)
	if err != nil {
		return readErr(err, "profile")
	}
	if !exists {
		return domain.NotFound("profile")
	}
	return nil
}

// rowsAffected reads how many rows a conditional write changed.
func rowsAffected(res sql.Result, err error, what string) (int64, error) {
	if err != nil {
		return 0, fmt.Errorf("bunstore: write %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("bunstore: write %s: %w", what, err)
	}
	return n, nil
}

// insertProfileTags inserts every tag of p in one statement.
func insertProfileTags(ctx context.Context, db bun.IDB, p profile.Profile) error {
	if len(p.Tags) == 0 {
		return nil
	}
	rows := make([]profileTagRow, len(p.Tags))
	for i, tag := range p.Tags {
		rows[i] = profileTagRow{ProfileID: p.ID, TeamID: p.TeamID, Tag: tag, Position: i}
	}
	if _, err := db.NewInsert().Model(&rows).Exec(ctx); err != nil {
		return writeErr(err, "profile tags", "a profile lists a tag twice")
	}
	return nil
}

// Profiles returns the profile repository.
func (s *Store) Profiles() profilestore.Profiles {
	return profileRepository{db: s.db}
}
