package bunstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/schema"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
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

	// QuotaShard is the row of the team's profile count that counts this
	// profile (see CreateWithin); only the store reads it.
	QuotaShard int `bun:"quota_shard,notnull"`

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
	tags := []string{}
	if r.Tags != "" && r.Tags != "[]" {
		if err := json.Unmarshal([]byte(r.Tags), &tags); err != nil {
			return profile.Profile{}, fmt.Errorf("bunstore: read profile tags: %w", err)
		}
	}
	fp, err := withDevice(profile.Fingerprint{
		UserAgent: r.UserAgent,
		Platform:  r.Platform,
		Locale:    r.Locale,
		Timezone:  r.Timezone,
		Screen:    profile.Screen{Width: r.ScreenWidth, Height: r.ScreenHeight},
	}, r.Device, r.TemplateID, r.ID)
	if err != nil {
		return profile.Profile{}, err
	}
	return profile.Profile{
		ID:          r.ID,
		TeamID:      r.TeamID,
		Name:        r.Name,
		TemplateID:  r.TemplateID,
		Browser:     r.Browser,
		Fingerprint: fp,
		ProxyID:     r.ProxyID,
		Proxy:       r.proxy(),
		Tags:        tags,
		Notes:       r.Notes,
		Session:     r.session(),
		Data:        r.data(),
		Cookies:     content(r.CookiesSHA256, r.CookiesSize),
		Version:     r.Version,
		CreatedBy:   r.CreatedBy,
		CreatedAt:   utc(r.CreatedAt),
		UpdatedAt:   utc(r.UpdatedAt),
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
	db      *bun.DB
	pool    *pgxpool.Pool // nil on SQLite
	timeout time.Duration
	creates *createBatcher // nil on SQLite
}

// The view of the profile p's proxy, read with it.
const (
	proxyColumns = `px.type AS proxy_type, px.host AS proxy_host, px.port AS proxy_port`
	proxyJoin    = `LEFT JOIN proxies AS px ON px.id = p.proxy_id AND px.team_id = p.team_id`
)

// selectProfiles reads profiles into rows with their proxy's view in the
// same query: one round trip for a profile or a page of them. Conditions
// must name the profile's columns with the alias p.
func (r profileRepository) selectProfiles(db bun.IDB, rows any) *bun.SelectQuery {
	return db.NewSelect().Model(rows).
		ColumnExpr(profileRowColumns).
		ColumnExpr(proxyColumns).
		Join(proxyJoin)
}

// profileRowColumns are every column of profileRow (a test holds the list
// to bun's), named rather than p.*, which on PostgreSQL also holds the
// proxy's view.
const profileRowColumns = `p.id, p.team_id, p.name, p.template_id, p.browser, p.user_agent, p.platform, p.locale, p.timezone,
	p.screen_width, p.screen_height, p.device, p.proxy_id, p.notes, p.version, p.created_by, p.created_at, p.updated_at,
	p.session_id, p.session_started_at, p.session_expires_at, p.session_launched_by, p.session_headless,
	p.session_cdp_url, p.session_cdp_token_hash, p.session_node,
	p.data_sha256, p.data_size, p.data_updated_at, p.cookies_sha256, p.cookies_size, p.quota_shard, p.tags`

// pgProfileColumns are what scanPG reads, in its order: profileRowColumns
// and the proxy's view.
const pgProfileColumns = profileRowColumns + `, ` + pgProxyView

// pgProxyView is the proxy's view as "type port host", kept in the
// profile's row by the triggers of the migration profile_proxy_view.
const pgProxyView = `p.proxy_view`

// pgProfileSelect is the start of every profile read on PostgreSQL.
const pgProfileSelect = `SELECT ` + pgProfileColumns + ` FROM profiles AS p`

// scanPG reads one row of pgProfileColumns into r: by hand from the raw
// values when byHand (see pgDecodable), else through pgx's Scan, whose
// planning, conversions and one allocation per pointer cost a page of
// profiles about a quarter of the service's CPU.
func (r *profileRow) scanPG(rows pgx.Rows, byHand bool) error {
	if byHand {
		return r.decodePG(rows.RawValues(), rows.FieldDescriptions())
	}
	var proxyID, view *string
	err := rows.Scan(&r.ID, &r.TeamID, &r.Name, &r.TemplateID, &r.Browser, &r.UserAgent, &r.Platform, &r.Locale, &r.Timezone,
		&r.ScreenWidth, &r.ScreenHeight, &r.Device, &proxyID, &r.Notes, &r.Version, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt,
		&r.SessionID, &r.SessionStartedAt, &r.SessionExpiresAt, &r.SessionLaunchedBy, &r.SessionHeadless,
		&r.SessionCDPURL, &r.SessionTokenHash, &r.SessionNode,
		&r.DataSHA256, &r.DataSize, &r.DataUpdatedAt, &r.CookiesSHA256, &r.CookiesSize, &r.QuotaShard, &r.Tags,
		&view)
	if proxyID != nil {
		r.ProxyID = *proxyID
	}
	if err == nil && view != nil {
		err = r.setProxyView(*view)
	}
	return err
}

// decodePG is scanPG by hand, for a result pgDecodable accepts.
func (r *profileRow) decodePG(values [][]byte, fields []pgconn.FieldDescription) error {
	d := pgValues{values: values, fields: fields}
	d.readText()
	d.str(&r.ID)
	d.str(&r.TeamID)
	d.str(&r.Name)
	d.str(&r.TemplateID)
	d.str(&r.Browser)
	d.str(&r.UserAgent)
	d.str(&r.Platform)
	d.str(&r.Locale)
	d.str(&r.Timezone)
	d.int(&r.ScreenWidth)
	d.int(&r.ScreenHeight)
	d.str(&r.Device)
	r.ProxyID, _ = d.nullStr()
	d.str(&r.Notes)
	d.int(&r.Version)
	d.str(&r.CreatedBy)
	d.time(&r.CreatedAt)
	d.time(&r.UpdatedAt)
	r.SessionID = d.strPtr()
	r.SessionStartedAt = d.timePtr()
	r.SessionExpiresAt = d.timePtr()
	r.SessionLaunchedBy = d.strPtr()
	r.SessionHeadless = d.boolPtr()
	r.SessionCDPURL = d.strPtr()
	r.SessionTokenHash = d.strPtr()
	r.SessionNode = d.strPtr()
	r.DataSHA256 = d.strPtr()
	r.DataSize = d.int64Ptr()
	r.DataUpdatedAt = d.timePtr()
	r.CookiesSHA256 = d.strPtr()
	r.CookiesSize = d.int64Ptr()
	d.int(&r.QuotaShard)
	d.str(&r.Tags)
	view, hasProxy := d.nullStr()
	if d.err != nil {
		return d.err
	}
	if hasProxy {
		return r.setProxyView(view)
	}
	return nil
}

// pgKind is what a column of pgProfileColumns holds, as decodePG reads it.
type pgKind uint8

const (
	pgText pgKind = iota
	pgInt
	pgTime
	pgBool
)

// pgProfileKinds are the kinds of pgProfileColumns, in its order.
var pgProfileKinds = [...]pgKind{
	pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, pgText, // id to timezone
	pgInt, pgInt, pgText, pgText, pgText, pgInt, pgText, pgTime, pgTime, // screen_width to updated_at
	pgText, pgTime, pgTime, pgText, pgBool, pgText, pgText, pgText, // the session
	pgText, pgInt, pgTime, pgText, pgInt, // data and cookies
	pgInt, pgText, pgText, // quota_shard, tags, the proxy's view
}

// pgDecodable says whether decodePG reads a result of these fields: each
// of a type of its column's kind, in binary; text may come in either
// format (pgx asks for text's in text), the two being the same bytes. Any
// other result (a column whose type was changed, an extension's type) goes
// through pgx's Scan, which knows every type.
func pgDecodable(fields []pgconn.FieldDescription) bool {
	if len(fields) != len(pgProfileKinds) {
		return false
	}
	for i, f := range fields {
		kind := pgProfileKinds[i]
		if f.Format != pgx.BinaryFormatCode && (kind != pgText || f.Format != pgx.TextFormatCode) {
			return false
		}
		var ok bool
		switch kind {
		case pgText:
			ok = f.DataTypeOID == pgtype.TextOID || f.DataTypeOID == pgtype.VarcharOID
		case pgInt:
			ok = f.DataTypeOID == pgtype.Int2OID || f.DataTypeOID == pgtype.Int4OID || f.DataTypeOID == pgtype.Int8OID
		case pgTime:
			ok = f.DataTypeOID == pgtype.TimestamptzOID
		case pgBool:
			ok = f.DataTypeOID == pgtype.BoolOID
		}
		if !ok {
			return false
		}
	}
	return true
}

// pgValues reads a row's values in order for decodePG, keeping the
// first error. A NULL reads as nil from a pointer column and is an error
// elsewhere, as it is for pgx's Scan. The row's text is one string that
// its text columns are cut from: one allocation where pgx's Scan made one
// per column (a pointer column that is not NULL adds one; an idle profile
// without data has none). The row's strings keep each other's bytes alive (the tags' JSON too):
// a few hundred bytes, for as long as the profile's strings live.
type pgValues struct {
	values [][]byte
	fields []pgconn.FieldDescription
	i      int
	err    error
	text   string // the row's text columns, one after another
	at     int    // where the next text column starts in text
}

// readText copies the row's text columns into one string.
func (d *pgValues) readText() {
	n := 0
	for i, k := range pgProfileKinds {
		if k == pgText {
			n += len(d.values[i])
		}
	}
	var b strings.Builder
	b.Grow(n)
	for i, k := range pgProfileKinds {
		if k == pgText {
			b.Write(d.values[i])
		}
	}
	d.text = b.String()
}

func (d *pgValues) next() []byte {
	v := d.values[d.i]
	d.i++
	return v
}

func (d *pgValues) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("bunstore: read profile column %s: %s", d.fields[d.i-1].Name, what)
	}
}

// cut is the next text column's string, cut from the row's text.
func (d *pgValues) cut(v []byte) string {
	s := d.text[d.at : d.at+len(v)]
	d.at += len(v)
	return s
}

func (d *pgValues) str(dst *string) {
	v := d.next()
	if v == nil {
		d.fail("NULL")
		return
	}
	*dst = d.cut(v)
}

// nullStr reads a nullable text column that is no pointer: "" and false
// for NULL.
func (d *pgValues) nullStr() (string, bool) {
	v := d.next()
	if v == nil {
		return "", false
	}
	return d.cut(v), true
}

func (d *pgValues) strPtr() *string {
	v := d.next()
	if v == nil {
		return nil
	}
	s := d.cut(v)
	return &s
}

func (d *pgValues) int(dst *int) {
	v := d.next()
	if v == nil {
		d.fail("NULL")
		return
	}
	*dst = int(d.integer(v))
}

func (d *pgValues) int64Ptr() *int64 {
	v := d.next()
	if v == nil {
		return nil
	}
	n := d.integer(v)
	return &n
}

// integer is an int2, int4 or int8: its length tells which.
func (d *pgValues) integer(v []byte) int64 {
	switch len(v) {
	case 2:
		return int64(int16(binary.BigEndian.Uint16(v)))
	case 4:
		return int64(int32(binary.BigEndian.Uint32(v)))
	case 8:
		return int64(binary.BigEndian.Uint64(v))
	}
	d.fail(fmt.Sprintf("an integer of %d bytes", len(v)))
	return 0
}

func (d *pgValues) time(dst *time.Time) {
	v := d.next()
	if v == nil {
		d.fail("NULL")
		return
	}
	*dst = d.timestamptz(v)
}

func (d *pgValues) timePtr() *time.Time {
	v := d.next()
	if v == nil {
		return nil
	}
	t := d.timestamptz(v)
	return &t
}

// pgEpochSeconds is PostgreSQL's epoch, 2000-01-01 UTC, in Unix seconds.
const pgEpochSeconds = 946_684_800

// timestamptz is microseconds since PostgreSQL's epoch, split as pgx splits
// them (adding the epoch in microseconds could overflow), in UTC. The
// greatest and least values are 'infinity' and '-infinity', which no
// time.Time holds.
func (d *pgValues) timestamptz(v []byte) time.Time {
	if len(v) != 8 {
		d.fail(fmt.Sprintf("a timestamptz of %d bytes", len(v)))
		return time.Time{}
	}
	us := int64(binary.BigEndian.Uint64(v))
	if us == math.MaxInt64 || us == math.MinInt64 {
		d.fail("an infinite timestamptz")
		return time.Time{}
	}
	return time.Unix(pgEpochSeconds+us/1_000_000, us%1_000_000*1_000).UTC()
}

func (d *pgValues) boolPtr() *bool {
	v := d.next()
	if v == nil {
		return nil
	}
	if len(v) != 1 {
		d.fail(fmt.Sprintf("a boolean of %d bytes", len(v)))
		return nil
	}
	b := v[0] != 0
	return &b
}

// setProxyView reads pgProxyView's "type port host".
func (r *profileRow) setProxyView(view string) error {
	typ, rest, ok1 := strings.Cut(view, " ")
	port, host, ok2 := strings.Cut(rest, " ")
	n, err := strconv.Atoi(port)
	if !ok1 || !ok2 || err != nil {
		return fmt.Errorf("bunstore: read proxy view %q", view)
	}
	r.ProxyType, r.ProxyHost, r.ProxyPort = &typ, &host, &n
	return nil
}

// pgRead runs a profile read on PostgreSQL outside any unit, on pgx itself
// rather than through database/sql and bun's scanner (which cost a read
// more CPU than the query did): prepared once per connection, then one
// round trip that neither parses nor plans, each row scanned by scanPG
// into one row that each must not keep. It is bounded as bun's hook bounds
// statements.
func (r profileRepository) pgRead(ctx context.Context, query string, args []any, each func(*profileRow) error) error {
	if r.timeout > 0 && ctx.Value(noDeadlineKey{}) == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	rows, err := r.pool.Query(ctx, query, append([]any{pgx.QueryExecModeCacheStatement}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		row     profileRow
		checked bool
		byHand  bool
	)
	for rows.Next() {
		if !checked {
			checked, byHand = true, pgDecodeByHand && pgDecodable(rows.FieldDescriptions())
		}
		row = profileRow{}
		if err := row.scanPG(rows, byHand); err != nil {
			return err
		}
		if err := each(&row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// pgDecodeByHand lets scanPG decode by hand the results it can; tests
// turn it off to compare with pgx's Scan.
var pgDecodeByHand = true

// pgReadable says whether a profile read may go to pgRead: on PostgreSQL,
// outside a unit (whose reads must see its own writes).
func (r profileRepository) pgReadable(ctx context.Context) bool {
	if r.pool == nil {
		return false
	}
	_, inUnit := ctx.Value(txKey{db: r.db}).(bun.Tx)
	return !inUnit
}

// pgPreparedOn runs query through pgx's statement cache (prepared) on tx
// (nil: ctx's unit, or none) and scans into dest.
func (r profileRepository) pgPreparedOn(ctx context.Context, tx *bun.Tx, dest any, query string, args ...any) error {
	p := prepared{db: r.db, timeout: r.timeout}
	if tx != nil {
		return p.queryOn(ctx, tx.Tx, dest, query, args...)
	}
	return p.query(ctx, dest, query, args...)
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

func (r profileRepository) Create(ctx context.Context, p profile.Profile) error {
	return r.CreateWithin(ctx, p, 0)
}

// profileShards is how many rows a team's profile count is spread over on
// PostgreSQL; the migration that made them names the same number.
const profileShards = 16

// CreateWithin counts the profile in team_profile_counts and inserts it,
// unless the team holds max profiles already (max 0 or less: no bound).
//
// On PostgreSQL the count is spread over profileShards rows per team, each
// admitting creates up to its share of max (the shares add up to max): a
// create takes one shard's row lock until it commits, so a team's creates
// run side by side instead of queueing, one commit's flush after another,
// on one row. The count, the profile and its tags are one statement on a
// shard picked at random (after a savepoint, in a unit of work; outside
// one, the statements of a team's creates that queue for a connection are
// sent and committed together: createBatcher), which reads no other shard: a shard carries the bound it was last spread
// for, and while any carries one, all are within their shares of it.
// When that shard is full, or carries another bound (max changed, creates
// without a bound went anywhere), or is not there yet, the create locks
// every shard of the team in order, adds them up and, if the team has
// room, spreads the count again by the shares of max, marks every shard
// with it and counts itself in a shard with room. Only the sum of a
// team's shards means anything, so a delete uncounts the profile from any
// shard (its own when it can). SQLite runs one writer at a time: one shard,
// three statements.
func (r profileRepository) CreateWithin(ctx context.Context, p profile.Profile, max int, events ...event.Event) error {
	row := newProfileRow(p)
	if r.db.Dialect().Name() != dialect.PG {
		return conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			res, err := tx.NewRaw(countProfileSQL, p.TeamID, max, max).Exec(ctx)
			n, err := rowsAffected(res, err, "profile count")
			if err != nil {
				return err
			}
			if n == 0 {
				return team.QuotaReached(max, "profiles")
			}
			if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
				return writeErr(err, "profile", "profile already exists")
			}
			if err := insertProfileTags(ctx, tx, p); err != nil {
				return err
			}
			return appendEvents(ctx, tx, events)
		})
	}
	unit, inUnit := ctx.Value(txKey{db: r.db}).(bun.Tx)
	evs := newPGEvents(events)
	if !inUnit && r.pool != nil {
		if counted, err := r.pgCreateAlone(ctx, row, p.Tags, evs, max); err != nil || counted {
			return err
		}
	} else {
		// In a unit, the unit holds its connection already: the shard is
		// this process's fewest-held one while no other create of the
		// process can be waiting for a connection with it.
		row.QuotaShard = createShards.take()
		taken := row.QuotaShard
		defer atUnitEnd(ctx, r.db, func() { createShards.give(taken) })
		// A shard's row changed by a create that committed while this one
		// waited for it is locked before its share is checked again, so a
		// create that finds it full may hold its lock; looking at every
		// shard with that lock held could wait in a cycle with another
		// create doing the same. In a unit, the savepoint lets the lock go;
		// alone, the statement's end does.
		if inUnit {
			if _, err := unit.ExecContext(ctx, "SAVEPOINT profile_count"); err != nil {
				return fmt.Errorf("bunstore: write profile count: %w", err)
			}
		}
		if counted, err := r.pgCreate(ctx, nil, row, p.Tags, evs, max); err != nil || counted {
			return err
		}
		if inUnit {
			if _, err := unit.ExecContext(ctx, "ROLLBACK TO SAVEPOINT profile_count"); err != nil {
				return fmt.Errorf("bunstore: write profile count: %w", err)
			}
		}
	}
	return conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewRaw(pgMakeShardsSQL, p.TeamID, profileShards-1).Exec(ctx); err != nil {
			return fmt.Errorf("bunstore: write profile count: %w", err)
		}
		var shards []struct {
			Shard    int `bun:"shard"`
			Profiles int `bun:"profiles"`
		}
		if err := tx.NewRaw(pgLockShardsSQL, p.TeamID).Scan(ctx, &shards); err != nil {
			return readErr(err, "profile count")
		}
		total := 0
		for _, sh := range shards {
			total += sh.Profiles
		}
		if max > 0 {
			if total >= max {
				return team.QuotaReached(max, "profiles")
			}
			// Spread the count again as the shares are, so that the
			// next creates find room where they land: the team is
			// under max, so every shard is then within its share and
			// one (the first whose share is not reached) has room.
			counts := make([]int, len(shards))
			ids := make([]int, len(shards))
			for i, sh := range shards {
				ids[i], counts[i] = sh.Shard, shardShare(sh.Shard, total)
			}
			if _, err := tx.NewRaw(pgSpreadSQL, max, pgdialect.Array(ids), pgdialect.Array(counts), p.TeamID).Exec(ctx); err != nil {
				return fmt.Errorf("bunstore: write profile count: %w", err)
			}
			for i, sh := range shards {
				if counts[i] < shardShare(sh.Shard, max) {
					row.QuotaShard = sh.Shard
					break
				}
			}
		}
		if max <= 0 {
			// Shards beyond their share of a bound are coming: none may
			// carry one any more.
			if _, err := tx.NewRaw(pgUnboundSQL, p.TeamID).Exec(ctx); err != nil {
				return fmt.Errorf("bunstore: write profile count: %w", err)
			}
		}
		counted, err := r.pgCreate(ctx, &tx, row, p.Tags, evs, max)
		if err == nil && !counted {
			err = fmt.Errorf("bunstore: profile count shard %d of team %s is missing", row.QuotaShard, p.TeamID)
		}
		return err
	})
}

// createShards spreads the creates of this process over the shards: each
// takes the shard the fewest of them hold (from a random start, so that
// instances spread too) until its transaction ends. With a pool of fewer
// connections than shards, no two creates of one process wait for one
// shard's row lock, which at random they did about one time in three.
var createShards shardPicker

type shardPicker struct {
	mu    sync.Mutex
	inUse [profileShards]int
}

func (s *shardPicker) take() int {
	start := rand.IntN(profileShards)
	s.mu.Lock()
	defer s.mu.Unlock()
	best := start
	for i := range profileShards {
		k := (start + i) % profileShards
		if s.inUse[k] < s.inUse[best] {
			best = k
		}
		if s.inUse[best] == 0 {
			break
		}
	}
	s.inUse[best]++
	return best
}

func (s *shardPicker) give(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse[shard]--
}

// shardShare is how many of a team's max profiles shard may count: max
// divided evenly, the remainder going to the lowest shards.
func shardShare(shard, max int) int {
	share := max / profileShards
	if shard < max%profileShards {
		share++
	}
	return share
}

// countProfileSQL (SQLite) adds one to the team's profile count unless
// that reaches beyond the bound (its two arguments; 0 or less is no
// bound); it changes no row when the team is full.
const countProfileSQL = `INSERT INTO team_profile_counts (team_id, shard, profiles, changes) VALUES (?, 0, 1, 1)
ON CONFLICT (team_id, shard) DO UPDATE SET profiles = team_profile_counts.profiles + 1, changes = team_profile_counts.changes + 1
WHERE ? <= 0 OR team_profile_counts.profiles < ?`

// pgShareSQL is shardShare in SQL, of the shard column of alias a and the
// bound $2.
func pgShareSQL(a string) string {
	return fmt.Sprintf("($2::integer / %d + CASE WHEN %s.shard < $2::integer %% %d THEN 1 ELSE 0 END)", profileShards, a, profileShards)
}

// pgMakeShardsSQL makes the team's shards that are missing; it locks none.
const pgMakeShardsSQL = `INSERT INTO team_profile_counts (team_id, shard, profiles)
SELECT ?, s, 0 FROM generate_series(0, ?::integer) AS s ON CONFLICT DO NOTHING`

// pgSpreadSQL sets the team's shards (the first array) to the counts (the
// second), spread for the bound.
const pgSpreadSQL = `UPDATE team_profile_counts AS t SET bound = ?, profiles = v.n
FROM unnest(?::integer[], ?::integer[]) AS v(shard, n) WHERE t.team_id = ? AND t.shard = v.shard`

// pgUnboundSQL takes the bound off every shard of the team.
const pgUnboundSQL = `UPDATE team_profile_counts SET bound = -1 WHERE team_id = ? AND bound <> -1`

// pgLockShardsSQL locks every shard of the team, in one order for every
// create, so two creates that look at them all never wait on each other
// in a cycle.
const pgLockShardsSQL = `SELECT shard, profiles FROM team_profile_counts WHERE team_id = ? ORDER BY shard FOR UPDATE`

// pgCreate runs pgCreateSQL for row and its events in the shard
// row.QuotaShard, on tx (nil: ctx's unit, or none), and says whether the
// profile was counted (and so inserted).
func (r profileRepository) pgCreate(ctx context.Context, tx *bun.Tx, row *profileRow, tags []string, evs pgEvents, max int) (bool, error) {
	var inserted []int
	sql, _ := r.pgCreateSQL(max > 0, len(tags) > 0)
	if err := r.pgPreparedOn(ctx, tx, &inserted, sql, r.pgCreateArgs(nil, row, tags, evs, max)...); err != nil {
		return false, writeErr(err, "profile", "profile already exists")
	}
	return len(inserted) == 1, nil
}

// pgCreateAlone is pgCreate outside any unit: one round trip on a
// connection of the pool, committed on its own or in a batch of the
// team's creates that queued meanwhile (createBatcher).
func (r profileRepository) pgCreateAlone(ctx context.Context, row *profileRow, tags []string, evs pgEvents, max int) (bool, error) {
	sql, name := r.pgCreateSQL(max > 0, len(tags) > 0)
	args := r.pgCreateArgs([]any{pgx.QueryExecModeCacheStatement}, row, tags, evs, max)
	if r.creates != nil {
		if res := r.creates.do(ctx, row.TeamID, max, name, sql, args); !res.alone {
			return res.counted, res.err
		}
	}
	return pgCreateOne(ctx, r.pool, r.timeout, sql, args)
}

// pgCreateOne runs one create's statement, sql with args (pgx's mode
// first, then pgCreateArgs), on its own. The shard is picked once the
// connection is held, so that the creates holding shards are those
// running, at most one per connection: picked before, while the creates
// of a full pool wait for a connection, several would hold each shard and
// queue on its row lock, one commit's flush after another. The arguments
// are made before, so that the connection is held for the round trip only.
func pgCreateOne(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration, sql string, args []any) (bool, error) {
	if timeout > 0 && ctx.Value(noDeadlineKey{}) == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("bunstore: write profile: %w", err)
	}
	defer c.Release()
	shard := createShards.take()
	defer createShards.give(shard)
	args[1+pgCreateShardArg] = shard
	var one int
	switch err := c.QueryRow(ctx, sql, args...).Scan(&one); {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, writeErr(err, "profile", "profile already exists")
	}
	return true, nil
}

// pgCreateArgs appends pgCreateSQL's arguments to args.
func (r profileRepository) pgCreateArgs(args []any, row *profileRow, tags []string, evs pgEvents, max int) []any {
	if tags == nil {
		tags = []string{}
	}
	args = slices.Grow(args, 10+len(r.createFields()))
	args = append(args, row.TeamID, max, tags, row.QuotaShard,
		evs.ids, evs.teams, evs.types, evs.occurred, evs.data, evs.createdAt)
	return r.insertArgs(args, row)
}

// pgCreateShardArg is where the shard is among pgCreateSQL's arguments
// ($4).
const pgCreateShardArg = 3

// createFields are the columns pgCreateSQL inserts as arguments of their
// own: every field of profileRow but the shard, which is $4.
func (r profileRepository) createFields() []*schema.Field {
	createFieldsOnce.Do(func() {
		for _, f := range r.db.Table(reflect.TypeFor[profileRow]()).Fields {
			if f.Name != "quota_shard" {
				createFieldList = append(createFieldList, f)
			}
		}
	})
	return createFieldList
}

var (
	createFieldsOnce sync.Once
	createFieldList  []*schema.Field
)

// pgEvents are the outbox events of a create as the arrays pgCreateSQL
// unnests.
type pgEvents struct {
	ids, teams, types, data []string
	occurred                []time.Time
	createdAt               time.Time
}

func newPGEvents(events []event.Event) pgEvents {
	evs := pgEvents{
		ids: make([]string, len(events)), teams: make([]string, len(events)), types: make([]string, len(events)),
		data: make([]string, len(events)), occurred: make([]time.Time, len(events)),
		createdAt: time.Now().UTC(),
	}
	for i, e := range events {
		evs.ids[i], evs.teams[i], evs.types[i] = e.ID, e.TeamID, string(e.Type)
		evs.data[i], evs.occurred[i] = string(e.Data), utc(e.OccurredAt)
	}
	return evs
}

// pgCreateStatements are CreateWithin's statement on PostgreSQL, each made
// once from the row's columns, in four kinds: under a bound or without one, with tags or
// without (then it has no part for them, whose table and indexes every
// run would open). $1 the team, $2 the bound, $3 the tags, $4 the shard,
// $5 to $9 the events' ids, teams, types, times and data, $10 when they
// are written, then the columns (cast: in INSERT ... SELECT, PostgreSQL
// does not infer their types). Under a bound, the shard counts the
// profile if it carries that bound and is within its share of it (then
// every shard is: see the migration that made bound); without one, if no
// shard of the team carries a bound any more. The profile, its tags and
// its events (listed as pending fan-out) are inserted only if it counted,
// and the statement then returns one row.
// Each also has the name the batches' connections prepare it by.
var pgCreateStatements [2][2]struct {
	once      sync.Once
	sql, name string
}

func (r profileRepository) pgCreateSQL(bounded, tagged bool) (sql, name string) {
	st := &pgCreateStatements[b2i(bounded)][b2i(tagged)]
	st.once.Do(func() {
		st.name = fmt.Sprintf("profilesvc_create_%d%d", b2i(bounded), b2i(tagged))
		count := `t.bound = $2::integer AND t.profiles < ` + pgShareSQL("t")
		if !bounded {
			count = `$2::integer <= 0
		AND NOT EXISTS (SELECT 1 FROM team_profile_counts AS o WHERE o.team_id = $1 AND o.bound <> -1)`
		}
		tags := `tags AS (INSERT INTO profile_tags (profile_id, team_id, tag, position)
	SELECT ins.id, ins.team_id, t.tag, t.ord - 1 FROM ins, unnest($3::text[]) WITH ORDINALITY AS t(tag, ord)),
`
		if !tagged {
			count += ` AND cardinality($3::text[]) = 0`
			tags = ""
		}
		cols, vals := []string{"quota_shard"}, []string{"$4::integer"}
		for i, f := range r.createFields() {
			cols = append(cols, string(f.SQLName))
			vals = append(vals, fmt.Sprintf("$%d::%s", i+11, f.CreateTableSQLType))
		}
		st.sql = `WITH c AS (UPDATE team_profile_counts AS t SET profiles = t.profiles + 1, changes = t.changes + 1
	WHERE t.team_id = $1 AND t.shard = $4::integer AND ` + count + `
	RETURNING t.team_id),
ins AS (INSERT INTO profiles (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(vals, ", ") + ` FROM c RETURNING id, team_id),
` + tags + `ev AS (INSERT INTO outbox_events (id, team_id, type, occurred_at, data, created_at)
	SELECT e.id, e.team_id, e.type, e.occurred_at, e.data::json, $10::timestamptz
	FROM ins, unnest($5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::text[]) AS e(id, team_id, type, occurred_at, data)
	RETURNING id),
pending AS (INSERT INTO outbox_pending (id) SELECT id FROM ev)
SELECT 1 FROM ins`
	})
	return st.sql, st.name
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// insertArgs appends the values of pgCreateSQL's columns to args, NULL
// where bun would write NULL (nullzero).
func (r profileRepository) insertArgs(args []any, row *profileRow) []any {
	v := reflect.ValueOf(row).Elem()
	for _, f := range r.createFields() {
		if f.NullZero && f.HasZeroValue(v) {
			args = append(args, nil)
			continue
		}
		args = append(args, f.Value(v).Interface())
	}
	return args
}

func (r profileRepository) ByID(ctx context.Context, teamID, id string) (profile.Profile, error) {
	var row profileRow
	if r.pgReadable(ctx) {
		found := false
		err := r.pgRead(ctx, pgProfileSelect+` WHERE p.team_id = $1 AND p.id = $2`, []any{teamID, id}, func(p *profileRow) error {
			row, found = *p, true
			return nil
		})
		if err != nil {
			return profile.Profile{}, readErr(err, "profile")
		}
		if !found {
			return profile.Profile{}, domain.NotFound("profile")
		}
		return row.profile()
	}
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

func (r profileRepository) Count(ctx context.Context, teamID string) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*profileRow)(nil)).Where("team_id = ?", teamID).Count(ctx)
	if err != nil {
		return 0, readErr(err, "profiles")
	}
	return int(n), nil
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
	if r.pgReadable(ctx) {
		return r.pgList(ctx, teamID, f)
	}
	var rows []profileRow
	q := r.selectProfiles(conn(ctx, r.db), &rows).Where("p.team_id = ?", teamID)
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
	return many(rows)
}

// tagFilter, completed by the tag and ")", keeps the profiles with a tag.
const tagFilter = "EXISTS (SELECT 1 FROM profile_tags AS pt WHERE pt.profile_id = p.id AND pt.tag ="

// pgList is List on pgRead: the same conditions, with parameters.
func (r profileRepository) pgList(ctx context.Context, teamID string, f profilestore.Filter) ([]profile.Profile, error) {
	var q strings.Builder
	q.WriteString(pgProfileSelect + ` WHERE p.team_id = $1`)
	args := []any{teamID}
	param := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.BeforeID != "" {
		q.WriteString(" AND p.id < " + param(f.BeforeID))
	}
	if f.Query != "" {
		q.WriteString(` AND lower(p.name) LIKE lower(` + param("%"+escapeLike(f.Query)+"%") + `) ESCAPE '\'`)
	}
	switch f.Status {
	case profile.StatusRunning:
		q.WriteString(" AND p.session_id IS NOT NULL")
	case profile.StatusIdle:
		q.WriteString(" AND p.session_id IS NULL")
	}
	if f.Tag != "" {
		q.WriteString(" AND " + tagFilter + " " + param(f.Tag) + ")")
	}
	q.WriteString(" ORDER BY p.id DESC LIMIT " + param(f.Limit))
	out := make([]profile.Profile, 0, f.Limit)
	err := r.pgRead(ctx, q.String(), args, func(row *profileRow) error {
		p, err := row.profile()
		out = append(out, p)
		return err
	})
	if err != nil {
		return nil, readErr(err, "profiles")
	}
	return out, nil
}

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
	return conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
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

// Delete removes the profile only while it holds no session, and takes it
// off the team's count.
func (r profileRepository) Delete(ctx context.Context, teamID, id string) error {
	return conn(ctx, r.db).RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var shards []int
		err := tx.NewDelete().Model((*profileRow)(nil)).
			Where("team_id = ?", teamID).
			Where("id = ?", id).
			Where("session_id IS NULL").
			Returning("quota_shard").
			Scan(ctx, &shards)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("bunstore: write profile: %w", err)
		}
		if len(shards) == 0 {
			if err := profileExists(ctx, tx, teamID, id); err != nil {
				return err
			}
			return domain.Conflict("profile is running; release it before deleting")
		}
		if _, err := tx.NewDelete().Model((*profileTagRow)(nil)).Where("profile_id = ?", id).Exec(ctx); err != nil {
			return fmt.Errorf("bunstore: write profile tags: %w", err)
		}
		return uncountProfile(ctx, tx, teamID, shards[0])
	})
}

// uncountProfile takes one from the team's count: from shard when it
// counts any, else (a spread moved the count) from the first shard that
// does, under the locks of every shard, taken in CreateWithin's order.
func uncountProfile(ctx context.Context, tx bun.Tx, teamID string, shard int) error {
	pg := tx.Dialect().Name() == dialect.PG
	if pg { // see CreateWithin: a failed attempt may hold the shard's lock
		if _, err := tx.ExecContext(ctx, "SAVEPOINT profile_uncount"); err != nil {
			return fmt.Errorf("bunstore: write profile count: %w", err)
		}
	}
	res, err := tx.NewRaw("UPDATE team_profile_counts SET profiles = profiles - 1, changes = changes + 1 WHERE team_id = ? AND shard = ? AND profiles > 0", teamID, shard).Exec(ctx)
	n, err := rowsAffected(res, err, "profile count")
	if err != nil || n == 1 {
		return err
	}
	if !pg { // a count already at 0: the change is still counted
		if _, err := tx.NewRaw(countChangeSQL, teamID, shard).Exec(ctx); err != nil {
			return fmt.Errorf("bunstore: write profile count: %w", err)
		}
		return nil
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT profile_uncount"); err != nil {
		return fmt.Errorf("bunstore: write profile count: %w", err)
	}
	var shards []struct {
		Shard    int `bun:"shard"`
		Profiles int `bun:"profiles"`
	}
	if err := tx.NewRaw(pgLockShardsSQL, teamID).Scan(ctx, &shards); err != nil {
		return readErr(err, "profile count")
	}
	for _, sh := range shards {
		if sh.Profiles > 0 {
			_, err := tx.NewRaw("UPDATE team_profile_counts SET profiles = profiles - 1, changes = changes + 1 WHERE team_id = ? AND shard = ?", teamID, sh.Shard).Exec(ctx)
			if err != nil {
				return fmt.Errorf("bunstore: write profile count: %w", err)
			}
			return nil
		}
	}
	// No shard counted it (a count out of step): the change still counts,
	// in the profile's shard, which holds every shard's lock already.
	if _, err := tx.NewRaw(countChangeSQL, teamID, shard).Exec(ctx); err != nil {
		return fmt.Errorf("bunstore: write profile count: %w", err)
	}
	return nil
}

// countChangeSQL counts a change of the team's list in a shard (see the
// migration profile_list_changes), making the shard if it is missing.
const countChangeSQL = `INSERT INTO team_profile_counts AS t (team_id, shard, profiles, changes) VALUES (?, ?, 0, 1)
ON CONFLICT (team_id, shard) DO UPDATE SET changes = t.changes + 1`

// listVersionSQL is the version of the team's list: the sum of its
// changes, which every committed write of its profiles (or of a proxy
// they show) makes larger, in the write's own transaction.
const listVersionSQL = `SELECT coalesce(sum(changes), 0) FROM team_profile_counts WHERE team_id = $1`

// ListVersion reads listVersionSQL: on PostgreSQL outside a unit, one
// prepared round trip that reads the team's 16 shard rows.
func (r profileRepository) ListVersion(ctx context.Context, teamID string) (string, error) {
	var v int64
	var err error
	if r.pgReadable(ctx) {
		bounded, cancel := prepared{timeout: r.timeout}.bounded(ctx)
		defer cancel()
		err = r.pool.QueryRow(bounded, listVersionSQL, pgx.QueryExecModeCacheStatement, teamID).Scan(&v)
	} else {
		err = conn(ctx, r.db).NewRaw(strings.Replace(listVersionSQL, "$1", "?", 1), teamID).Scan(ctx, &v)
	}
	if err != nil {
		return "", readErr(err, "profiles")
	}
	return strconv.FormatInt(v, 10), nil
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
	return profileRepository{db: s.db, pool: s.pool, timeout: s.queryTimeout, creates: s.creates}
}
