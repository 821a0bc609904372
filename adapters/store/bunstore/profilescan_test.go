package bunstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// randomText is up to 12 runes of ASCII, accents, CJK, emoji, a combining
// mark and what SQL or LIKE could read specially; empty one time in five.
func randomText(rng *rand.Rand) string {
	if rng.IntN(5) == 0 {
		return ""
	}
	runes := []rune("aZ09 _%\\'\"é日本🙂\u0301ßΩ\t")
	var b strings.Builder
	for range 1 + rng.IntN(12) {
		b.WriteRune(runes[rng.IntN(len(runes))])
	}
	return b.String()
}

// randomTime is an instant with microseconds between 1900 and 2200 (before
// and after PostgreSQL's epoch) in a zone that is not UTC.
func randomTime(rng *rand.Rand) time.Time {
	lo := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	hi := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	zone := time.FixedZone("Z", (rng.IntN(26*4)-12*4+1)*15*60)
	return time.UnixMicro(lo + rng.Int64N(hi-lo)).In(zone)
}

// randomProfile is a profile of team tm_1 whose every optional part is
// set or not at random; its proxy, when it has one, is prx_1 or one gone.
func randomProfile(rng *rand.Rand, i int) profile.Profile {
	p := profile.Profile{
		ID: fmt.Sprintf("prf_%04d", i) + randomText(rng), TeamID: "tm_1", Name: randomText(rng), TemplateID: randomText(rng),
		Browser:     randomText(rng),
		Fingerprint: randomFingerprint(rng),
		Notes:       randomText(rng), Version: rng.IntN(1 << 31), CreatedBy: randomText(rng),
		CreatedAt: randomTime(rng), UpdatedAt: randomTime(rng),
	}
	switch rng.IntN(3) {
	case 1:
		p.ProxyID = "prx_1"
	case 2:
		p.ProxyID = "prx_gone"
	}
	for j := range rng.IntN(4) {
		p.Tags = append(p.Tags, fmt.Sprint(j)+randomText(rng))
	}
	if rng.IntN(2) == 0 {
		p.Session = &profile.Session{ID: fmt.Sprintf("ses_%04d", i) + randomText(rng), StartedAt: randomTime(rng), ExpiresAt: randomTime(rng),
			LaunchedBy: randomText(rng), Headless: rng.IntN(2) == 0, CDPURL: randomText(rng),
			CDPTokenHash: randomText(rng), Node: randomText(rng)}
	}
	if rng.IntN(2) == 0 {
		p.Data = &profile.Data{Content: profile.Content{SHA256: randomText(rng), Size: rng.Int64() - rng.Int64()},
			UpdatedAt: randomTime(rng)}
	}
	if rng.IntN(2) == 0 {
		p.Cookies = &profile.Content{SHA256: randomText(rng), Size: rng.Int64N(1 << 40)}
	}
	return p
}

// randomFingerprint sets every field of a fingerprint at random; its lists
// are nil, empty or not.
func randomFingerprint(rng *rand.Rand) profile.Fingerprint {
	n := func() int { return rng.IntN(1<<31) - rng.IntN(1<<31) }
	f := func() float64 { return float64(n()) / float64(1+rng.IntN(1000)) }
	list := func() []string {
		switch rng.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		out := make([]string, 1+rng.IntN(20))
		for i := range out {
			out[i] = randomText(rng)
		}
		return out
	}
	return profile.Fingerprint{UserAgent: randomText(rng), Platform: randomText(rng), Locale: randomText(rng), Timezone: randomText(rng),
		Screen:    profile.Screen{Width: rng.IntN(1 << 31), Height: -rng.IntN(1 << 31), AvailWidth: n(), AvailHeight: n(), ColorDepth: n(), PixelRatio: f()},
		Navigator: profile.Navigator{HardwareConcurrency: n(), DeviceMemory: f(), MaxTouchPoints: n(), Languages: list()},
		ClientHints: profile.ClientHints{Platform: randomText(rng), PlatformVersion: randomText(rng), Architecture: randomText(rng),
			Bitness: randomText(rng), Model: randomText(rng), Mobile: rng.IntN(2) == 0},
		Window: profile.Window{ChromeWidth: n(), ChromeHeight: n()},
		WebGL: profile.WebGL{Vendor: randomText(rng), Renderer: randomText(rng), MaxTextureSize: n(), MaxRenderbufferSize: n(),
			MaxViewportDims: [2]int{n(), n()}, MaxVertexAttribs: n(), MaxVertexUniformVectors: n(), MaxFragmentUniformVectors: n(),
			MaxVaryingVectors: n(), MaxCombinedTextureImageUnits: n(), MaxTextureImageUnits: n(), MaxVertexTextureImageUnits: n(),
			MaxCubeMapTextureSize: n(), AliasedLineWidthRange: [2]float64{f(), f()}, AliasedPointSizeRange: [2]float64{f(), f()}},
		Fonts:        list(),
		MediaDevices: profile.MediaDevices{AudioInputs: n(), VideoInputs: n(), AudioOutputs: n()},
		WebRTC:       randomText(rng), NoiseSeed: randomText(rng),
	}
}

// testProxy is the proxy prx_1 that random profiles refer to.
var testProxy = proxy.Proxy{ID: "prx_1", TeamID: "tm_1", Name: "p", Type: proxy.TypeSOCKS5, Host: "127.0.0.1", Port: 1080,
	PasswordSealed: []byte{1}, Status: proxy.StatusUnknown, CreatedAt: at, UpdatedAt: at}

// wantRead is p as a read returns it: no tags as an empty list, and the
// view of prx_1 (a missing proxy is known by its id alone).
func wantRead(p profile.Profile) profile.Profile {
	if p.Tags == nil {
		p.Tags = []string{}
	}
	switch p.ProxyID {
	case testProxy.ID:
		p.Proxy = &profile.ProxyRef{ID: p.ProxyID, Type: string(testProxy.Type), Host: testProxy.Host, Port: testProxy.Port}
	case "":
	default:
		p.Proxy = &profile.ProxyRef{ID: p.ProxyID}
	}
	return p
}

// profileDiff lists where got differs from want: times must be the same
// instants, in UTC; everything else equal.
func profileDiff(got, want profile.Profile) []string {
	var diffs []string
	instant := func(what string, g, w *time.Time) {
		if !g.Equal(*w) || g.Location() != time.UTC {
			diffs = append(diffs, fmt.Sprintf("%s is %s, want %s in UTC", what, g, w.UTC()))
		}
		*g, *w = time.Time{}, time.Time{}
	}
	instant("CreatedAt", &got.CreatedAt, &want.CreatedAt)
	instant("UpdatedAt", &got.UpdatedAt, &want.UpdatedAt)
	if got.Session != nil && want.Session != nil {
		gs, ws := *got.Session, *want.Session
		instant("Session.StartedAt", &gs.StartedAt, &ws.StartedAt)
		instant("Session.ExpiresAt", &gs.ExpiresAt, &ws.ExpiresAt)
		got.Session, want.Session = &gs, &ws
	}
	if got.Data != nil && want.Data != nil {
		gd, wd := *got.Data, *want.Data
		instant("Data.UpdatedAt", &gd.UpdatedAt, &wd.UpdatedAt)
		got.Data, want.Data = &gd, &wd
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !reflect.DeepEqual(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s is %s, want %s", gv.Type().Field(i).Name, show(g), show(w)))
		}
	}
	return diffs
}

// show prints what a pointer field points to.
func show(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return fmt.Sprintf("&%+v", rv.Elem().Interface())
	}
	return fmt.Sprintf("%+v", v)
}

// listAll reads every profile of tm_1 through List, a page of 50 at a time.
func listAll(t *testing.T, s *bunstore.Store) []profile.Profile {
	t.Helper()
	var all []profile.Profile
	f := profilestore.Filter{Limit: 50}
	for {
		page, err := s.Profiles().List(context.Background(), "tm_1", f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < f.Limit {
			return all
		}
		f.BeforeID = page[len(page)-1].ID
	}
}

// checkReads reads every profile of want back through ByID and List and
// compares each with what was written.
func checkReads(t *testing.T, s *bunstore.Store, want map[string]profile.Profile) {
	t.Helper()
	ctx := context.Background()
	for id, w := range want {
		got, err := s.Profiles().ByID(ctx, "tm_1", id)
		if err != nil {
			t.Fatalf("ByID %q: %v", id, err)
		}
		if diffs := profileDiff(got, wantRead(w)); len(diffs) > 0 {
			t.Fatalf("ByID %q read back:\n%s", id, strings.Join(diffs, "\n"))
		}
	}
	listed := listAll(t, s)
	if len(listed) != len(want) {
		t.Fatalf("List read %d profiles, want %d", len(listed), len(want))
	}
	for _, got := range listed {
		w, ok := want[got.ID]
		if !ok {
			t.Fatalf("List read %q, which was not written", got.ID)
		}
		if diffs := profileDiff(got, wantRead(w)); len(diffs) > 0 {
			t.Fatalf("List read %q back:\n%s", got.ID, strings.Join(diffs, "\n"))
		}
	}
}

// createRandom writes n random profiles and prx_1 to s and returns them by id.
func createRandom(t *testing.T, s *bunstore.Store, n int) map[string]profile.Profile {
	t.Helper()
	ctx := context.Background()
	if err := s.Proxies().Create(ctx, testProxy); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random profiles of seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	want := map[string]profile.Profile{}
	for i := range n {
		p := randomProfile(rng, i)
		if err := s.Profiles().Create(ctx, p); err != nil {
			t.Fatalf("create %+v: %v", p, err)
		}
		want[p.ID] = p
	}
	return want
}

// Random profiles read back on PostgreSQL as they were written, decoded
// by hand and through pgx's Scan alike.
func TestProfileReadsRandomProfiles(t *testing.T) {
	s := openStore(t, testenv.PostgresURL(t))
	want := createRandom(t, s, 300)
	byHand, err := bunstore.ProfileReadByHand(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !byHand {
		t.Fatal("the profiles table's reads are not decoded by hand")
	}
	checkReads(t, s, want)
	fast := listAll(t, s)

	bunstore.DecodeProfilesByHand(t, false)
	checkReads(t, s, want)
	if scanned := listAll(t, s); !reflect.DeepEqual(fast, scanned) {
		t.Fatal("the profiles decoded by hand differ from those pgx's Scan reads")
	}
}

// A column whose type is not the one the hand decoder expects makes the
// reads go through pgx's Scan, and they read what was written; other
// types of a column's kind are still decoded by hand.
func TestProfileReadsOtherColumnTypes(t *testing.T) {
	t.Parallel()
	url := testenv.PostgresURL(t)
	s := openStore(t, url)
	want := createRandom(t, s, 40)
	ctx := context.Background()
	for _, c := range []struct {
		alter  string
		byHand bool
	}{
		{`ALTER TABLE profiles ALTER COLUMN notes TYPE varchar(1000), ALTER COLUMN version TYPE bigint,
			ALTER COLUMN screen_height TYPE smallint USING screen_height % 30000`, true},
		{`ALTER TABLE profiles ALTER COLUMN screen_width TYPE numeric`, false},
		{`ALTER TABLE profiles ALTER COLUMN data_updated_at TYPE timestamp USING data_updated_at AT TIME ZONE 'UTC'`, false},
	} {
		if _, err := bunstore.DB(s).ExecContext(ctx, c.alter); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.alter, "screen_height") {
			for id, p := range want {
				p.Fingerprint.Screen.Height %= 30000
				want[id] = p
			}
		}
		// A fresh store: the old one's connections hold statements
		// prepared for the old types.
		fresh := openStore(t, url)
		byHand, err := bunstore.ProfileReadByHand(ctx, fresh)
		if err != nil {
			t.Fatal(err)
		}
		if byHand != c.byHand {
			t.Fatalf("after %s, reads by hand: %v, want %v", c.alter, byHand, c.byHand)
		}
		checkReads(t, fresh, want)
	}
}

// An infinite time fails the read by hand rather than reading as some
// time.
func TestProfileReadRejectsInfinity(t *testing.T) {
	t.Parallel()
	s := openStore(t, testenv.PostgresURL(t))
	ctx := context.Background()
	p := benchProfile("tm_1", 1)
	p.Data = &profile.Data{Content: profile.Content{SHA256: "d", Size: 1}, UpdatedAt: at}
	if err := s.Profiles().Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, inf := range []string{"infinity", "-infinity"} {
		if _, err := bunstore.DB(s).ExecContext(ctx, "UPDATE profiles SET data_updated_at = '"+inf+"'"); err != nil {
			t.Fatal(err)
		}
		got, err := s.Profiles().ByID(ctx, "tm_1", p.ID)
		if err == nil || !strings.Contains(err.Error(), "infinite") {
			t.Fatalf("with data_updated_at %s, ByID read %+v, error %v", inf, got.Data, err)
		}
	}
}

// profileFields are the fields of a profile read's result as PostgreSQL
// describes them for pgx: text in text format, the rest in binary.
func profileFields() []pgconn.FieldDescription {
	const text, int4, int8, tstz, boolean = 25, 23, 20, 1184, 16
	oids := []uint32{
		text, text, text, text, text, text, text, text, text, // id to timezone
		int4, int4, text, text, text, int4, text, tstz, tstz, // screen_width to updated_at
		text, tstz, tstz, text, boolean, text, text, text, // the session
		text, int8, tstz, text, int8, // data and cookies
		int4, text, text, // quota_shard, tags, the proxy's view
	}
	fields := make([]pgconn.FieldDescription, len(oids))
	for i, oid := range oids {
		fields[i] = pgconn.FieldDescription{Name: fmt.Sprint("c", i), DataTypeOID: oid, Format: 1}
		if oid == text {
			fields[i].Format = 0
		}
	}
	return fields
}

func TestProfileFieldsDecodable(t *testing.T) {
	t.Parallel()
	if !bunstore.ProfileFieldsDecodable(profileFields()) {
		t.Fatal("the fields of the profiles table are not decoded by hand")
	}
	const varchar, int2, numeric, timestamp, jsonb = 1043, 21, 1700, 1114, 3802
	for _, c := range []struct {
		what   string
		change func([]pgconn.FieldDescription) []pgconn.FieldDescription
		want   bool
	}{
		{"text as binary", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[0].Format = 1; return f }, true},
		{"varchar", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[2].DataTypeOID = varchar; return f }, true},
		{"int2", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[9].DataTypeOID = int2; return f }, true},
		{"int4 as text", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[9].Format = 0; return f }, false},
		{"timestamptz as text", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[16].Format = 0; return f }, false},
		{"bool as text", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[22].Format = 0; return f }, false},
		{"numeric", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[10].DataTypeOID = numeric; return f }, false},
		{"timestamp", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[28].DataTypeOID = timestamp; return f }, false},
		{"jsonb device", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[11].DataTypeOID = jsonb; return f }, false},
		{"jsonb tags", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[32].DataTypeOID = jsonb; return f }, false},
		{"an unknown type", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[33].DataTypeOID = 987654; return f }, false},
		{"int8 for a bool", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { f[22].DataTypeOID = 20; return f }, false},
		{"a column fewer", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { return f[:len(f)-1] }, false},
		{"a column more", func(f []pgconn.FieldDescription) []pgconn.FieldDescription { return append(f, f[0]) }, false},
	} {
		if got := bunstore.ProfileFieldsDecodable(c.change(profileFields())); got != c.want {
			t.Errorf("with %s, decoded by hand: %v, want %v", c.what, got, c.want)
		}
	}
}

// BenchmarkProfileList50 reads a page of 50 profiles through List on
// PostgreSQL, half of them running and with data, so that the read decodes
// both NULL and set optional columns.
func BenchmarkProfileList50(b *testing.B) {
	s, err := bunstore.Open(context.Background(), testenv.StoreOptions(b, testenv.PostgresURL(b)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	if _, err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		p := benchProfile("tm_1", i)
		if i%2 == 0 {
			p.Session = &profile.Session{ID: "ses_" + p.ID, StartedAt: at, ExpiresAt: at.Add(time.Hour), LaunchedBy: "usr_1",
				Headless: true, CDPURL: "ws://127.0.0.1:9222/devtools", CDPTokenHash: "h", Node: "node-1"}
			p.Data = &profile.Data{Content: profile.Content{SHA256: "d", Size: 1 << 20}, UpdatedAt: at}
			p.Cookies = &profile.Content{SHA256: "c", Size: 4096}
		}
		if err := s.Profiles().Create(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page, err := s.Profiles().List(ctx, "tm_1", profilestore.Filter{Limit: 50})
		if err != nil || len(page) != 50 {
			b.Fatalf("List read %d profiles: %v", len(page), err)
		}
	}
}
