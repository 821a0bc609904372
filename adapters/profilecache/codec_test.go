package profilecache

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// fill sets every field reachable from v (pointers allocated, slices of
// a few elements, or nil or empty) to a random value, so that a field the
// codec forgets shows as a difference.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		runes := []rune("aé東🎭\x00\"\\<")
		s := make([]rune, r.IntN(12))
		for i := range s {
			s[i] = runes[r.IntN(len(runes))]
		}
		v.SetString(string(s))
	case reflect.Int, reflect.Int64:
		v.SetInt(r.Int64() - r.Int64())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Float64:
		v.SetFloat([]float64{0, -1, 2.625, 1.0 / 3, 1e-300, math.MaxFloat64, math.Inf(1)}[r.IntN(7)])
	case reflect.Array:
		for i := range v.Len() {
			fill(r, v.Index(i))
		}
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(r, v.Elem())
	case reflect.Slice:
		switch r.IntN(3) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			v.Set(reflect.MakeSlice(v.Type(), 3, 3))
			for i := range 3 {
				fill(r, v.Index(i))
			}
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if r.IntN(5) == 0 {
				v.SetZero()
				return
			}
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<40)-1<<39, r.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: no rule for " + v.Kind().String())
	}
}

// Every field of a profile comes back as it went in: strings, numbers,
// times to the nanosecond, nil and empty tags, pointers nil or set.
func TestEntryCodecKeepsEveryField(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		var p profile.Profile
		fill(r, reflect.ValueOf(&p).Elem())
		got, err := decodeProfile(encodeProfile(p))
		if err != nil {
			t.Fatalf("profile %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("profile %d:\n got %#v\nwant %#v", i, got, p)
		}
	}
}

// A truncated, lengthened or foreign entry is refused, never read as
// another profile.
func TestEntryCodecRefusesDamagedEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var p profile.Profile
	fill(r, reflect.ValueOf(&p).Elem())
	p.Session = &profile.Session{ID: "ses_1", Headless: true}
	b := encodeProfile(p)
	for n := range len(b) {
		if _, err := decodeProfile(b[:n]); err == nil {
			t.Fatalf("the first %d of %d bytes decoded", n, len(b))
		}
	}
	if _, err := decodeProfile(append(append([]byte{}, b...), 0)); err == nil {
		t.Fatal("an entry with a byte more decoded")
	}
	if _, err := decodeProfile([]byte(`{"ID":"prf_1"}`)); err == nil {
		t.Fatal("a JSON entry decoded")
	}
}
