package browserdata_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
	domaindata "github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
)

// Cookies put are read back normalised, as stored; the same list again
// writes nothing, and an empty list removes them.
func TestPutCookiesThenCookies(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	in := []domaindata.Cookie{{Name: "sid", Value: "1", Domain: "Shop.Example", Expires: -1, HTTPOnly: true}}
	want := []domaindata.Cookie{{Name: "sid", Value: "1", Domain: "shop.example", Path: "/", Expires: -1, HTTPOnly: true, SameSite: "Lax"}}

	none, err := f.svc.Cookies(ctx, alice, p.ID)
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("cookies of a new profile: %#v, %v; want an empty list", none, err)
	}
	stored, err := f.svc.PutCookies(ctx, alice, p.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, want) {
		t.Fatalf("PutCookies answered %+v, want %+v", stored, want)
	}
	got, err := f.svc.Cookies(ctx, alice, p.ID)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Cookies: %+v, %v; want %+v", got, err, want)
	}
	if v := f.stored(t, p.ID).Version; v != 2 {
		t.Fatalf("version after the put: %d, want 2", v)
	}
	if _, err := f.svc.PutCookies(ctx, alice, p.ID, in); err != nil {
		t.Fatal(err)
	}
	if v, n := f.stored(t, p.ID).Version, f.updates(t); v != 2 || n != 1 {
		t.Fatalf("the same cookies again: version %d, %d profile.updated; want 2 and 1", v, n)
	}

	cleared, err := f.svc.PutCookies(ctx, alice, p.ID, nil)
	if err != nil || cleared == nil || len(cleared) != 0 {
		t.Fatalf("PutCookies of none: %#v, %v; want an empty list", cleared, err)
	}
	if got := f.stored(t, p.ID); got.Cookies != nil || got.Version != 3 {
		t.Fatalf("after removing the cookies: %+v version %d; want none, version 3", got.Cookies, got.Version)
	}
}

// Cookies are for members of the profile's team, checked, and not put
// while the profile runs.
func TestCookiesRefusals(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	ok := []domaindata.Cookie{{Name: "sid", Value: "1", Domain: "shop.example"}}
	if _, err := f.svc.Cookies(ctx, viewer, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer reads cookies: %v, want forbidden", err)
	}
	if _, err := f.svc.PutCookies(ctx, viewer, p.ID, ok); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer puts cookies: %v, want forbidden", err)
	}
	if _, err := f.svc.Cookies(ctx, outsider, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team reads cookies: %v, want not found", err)
	}
	if _, err := f.svc.PutCookies(ctx, outsider, p.ID, ok); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team puts cookies: %v, want not found", err)
	}
	if _, err := f.svc.PutCookies(ctx, alice, p.ID, []domaindata.Cookie{{Name: "", Value: "1", Domain: "shop.example"}}); !domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("a cookie without a name: %v, want a validation error", err)
	}
	f.run(t, p.ID)
	_, err := f.svc.PutCookies(ctx, alice, p.ID, ok)
	var de *domain.Error
	if !domain.IsKind(err, domain.KindConflict) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "session" {
		t.Fatalf("cookies of a running profile: %v, want a conflict naming the session", err)
	}
	if got := f.stored(t, p.ID).Cookies; got != nil {
		t.Fatalf("cookies after the refusals: %+v, want none", got)
	}
}

// Cookies that cannot be read back (not a cookie list, or no blob at
// all) are an error, not an empty list.
func TestCookiesUnreadable(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	junk := []byte("not a cookie list")
	info, err := f.blobDeps.Blobs.Put(ctx, bytes.NewReader(junk), int64(len(junk)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []profile.Content{{SHA256: info.SHA256, Size: info.Size}, {SHA256: "0000000000000000000000000000000000000000000000000000000000000000", Size: 1}} {
		next := f.stored(t, p.ID)
		next.Cookies = &c
		next.Version++
		if err := f.store.Profiles().Update(ctx, next, next.Version-1); err != nil {
			t.Fatal(err)
		}
		if cs, err := f.svc.Cookies(ctx, alice, p.ID); err == nil {
			t.Fatalf("cookies from blob %s: %v; want an error", c.SHA256, cs)
		}
	}
}
