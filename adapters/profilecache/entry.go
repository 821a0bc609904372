package profilecache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// An entry is the profile in JSON, as encoding/json writes the domain's
// type. Its tag (valueTag) is a digest of that type, field by field: an
// entry written by an instance whose profile has other fields (another
// version, before or after a change) is a miss, never read with a field
// left out or misplaced.
var valueTag = "p" + typeDigest(reflect.TypeFor[profile.Profile]())

// encodeEntry is p's entry; it fails only for a value JSON has no form for
// (a float that is not finite, a time past year 9999), which the domain's
// checks never let through.
func encodeEntry(p profile.Profile) ([]byte, error) {
	return json.Marshal(p)
}

// decodeEntry reads what encodeEntry wrote.
func decodeEntry(b []byte) (profile.Profile, error) {
	var p profile.Profile
	err := json.Unmarshal(b, &p)
	return p, err
}

// typeDigest names t's shape: each field's name and type, all the way
// down (a time is a leaf: JSON writes it as one string).
func typeDigest(t reflect.Type) string {
	h := sha256.New()
	writeShape(h, t)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func writeShape(h hash.Hash, t reflect.Type) {
	fmt.Fprintf(h, "%s(", t.Kind())
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice:
		writeShape(h, t.Elem())
	case reflect.Array:
		fmt.Fprintf(h, "%d,", t.Len())
		writeShape(h, t.Elem())
	case reflect.Map:
		writeShape(h, t.Key())
		writeShape(h, t.Elem())
	case reflect.Struct:
		if t == reflect.TypeFor[time.Time]() {
			break
		}
		for f := range t.Fields() {
			fmt.Fprintf(h, "%s:", f.Name)
			writeShape(h, f.Type)
		}
	}
	fmt.Fprint(h, ")")
}
