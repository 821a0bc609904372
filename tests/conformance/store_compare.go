package conformance

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/profilesvc/profilesvc/domain/webhook"
)

// checkEqual reports every difference between got, read from a store, and
// want, what was written or what a write must have made of it, under the
// rules of storageDiff. Each difference is named by its path from name, as
// in "profile.Session.ExpiresAt".
func checkEqual[T any](t *testing.T, name string, got, want T) {
	t.Helper()
	for _, d := range storageDiff(name, got, want) {
		t.Error(d)
	}
}

// storageDiff walks got and want together, through structs, pointers,
// slices, arrays, maps and interfaces, and returns one line per difference.
// Every struct field takes part, unexported ones included, so a field added
// to a domain type is compared without a change here. The storage rules:
//
//   - A time.Time must come back in UTC, whatever zone it was written in,
//     and within storeTimePrecision of the instant written.
//   - A byte slice ([]byte, json.RawMessage) must come back byte for byte:
//     webhook signatures cover event data and delivery payloads, so a store
//     that re-encodes JSON would change what receivers verify; hashes are
//     compared as they were written.
//   - A nil slice or map equals an empty one: SQL stores cannot tell them
//     apart, and the service never does.
//   - A field the store numbers itself (storeNumbered) is compared only
//     when want sets it: what was written leaves it zero, and the suites
//     of the outbox and the deliveries check the numbers.
//   - Anything else compares with ==.
//
// Stored entities are trees of plain data: a pointer cycle would not end,
// and a func or chan field cannot be compared.
func storageDiff[T any](name string, got, want T) []string {
	var d differences
	d.compare(name, reflect.ValueOf(&got).Elem(), reflect.ValueOf(&want).Elem())
	return d
}

var timeType = reflect.TypeFor[time.Time]()

// storeNumbered are the fields a store sets, by type and name.
var storeNumbered = map[reflect.Type]map[string]bool{
	reflect.TypeFor[webhook.Delivery](): {"Started": true},
}

type differences []string

func (d *differences) add(path, format string, args ...any) {
	*d = append(*d, path+": "+fmt.Sprintf(format, args...))
}

// compare compares two values of one type. Neither may have been reached
// through an unexported field: field hands such values over readable.
func (d *differences) compare(path string, got, want reflect.Value) {
	if got.Type() == timeType {
		d.compareTime(path, got.Interface().(time.Time), want.Interface().(time.Time))
		return
	}
	switch got.Kind() {
	case reflect.Struct:
		got, want = addressable(got), addressable(want)
		for i := range got.NumField() {
			if storeNumbered[got.Type()][got.Type().Field(i).Name] && field(want, i).IsZero() {
				continue
			}
			d.compare(path+"."+got.Type().Field(i).Name, field(got, i), field(want, i))
		}
	case reflect.Pointer, reflect.Interface:
		switch {
		case got.IsNil() && want.IsNil():
		case got.IsNil():
			d.add(path, "got nil, want %#v", want.Elem())
		case want.IsNil():
			d.add(path, "got %#v, want nil", got.Elem())
		case got.Elem().Type() != want.Elem().Type():
			d.add(path, "got a %v, want a %v", got.Elem().Type(), want.Elem().Type())
		default:
			d.compare(path, got.Elem(), want.Elem())
		}
	case reflect.Slice:
		if got.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				d.add(path, "got %q, want exactly %q", got.Bytes(), want.Bytes())
			}
			return
		}
		if got.Len() != want.Len() {
			d.add(path, "length %d, want %d: got %#v, want %#v", got.Len(), want.Len(), got, want)
			return
		}
		d.compareElements(path, got, want)
	case reflect.Array:
		d.compareElements(path, got, want)
	case reflect.Map:
		d.compareMap(path, got, want)
	default:
		if !got.Equal(want) {
			d.add(path, "got %#v, want %#v", got, want)
		}
	}
}

func (d *differences) compareTime(path string, got, want time.Time) {
	if got.Location() != time.UTC {
		d.add(path, "location %v, want UTC", got.Location())
	}
	if diff := got.Sub(want); diff <= -storeTimePrecision || diff >= storeTimePrecision {
		d.add(path, "got %v, want %v (within %v)", got, want, storeTimePrecision)
	}
}

func (d *differences) compareElements(path string, got, want reflect.Value) {
	for i := range got.Len() {
		d.compare(fmt.Sprintf("%s[%d]", path, i), got.Index(i), want.Index(i))
	}
}

// compareMap compares the entries of both maps in the order of their keys'
// text, so that a report reads the same on every run.
func (d *differences) compareMap(path string, got, want reflect.Value) {
	keys := want.MapKeys()
	for _, k := range got.MapKeys() {
		if !want.MapIndex(k).IsValid() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(mapKey(a), mapKey(b)) })
	for _, k := range keys {
		entry := path + "[" + mapKey(k) + "]"
		g, w := got.MapIndex(k), want.MapIndex(k)
		switch {
		case !g.IsValid():
			d.add(entry, "missing, want %#v", w)
		case !w.IsValid():
			d.add(entry, "got %#v, want no entry", g)
		default:
			d.compare(entry, g, w)
		}
	}
}

func mapKey(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return strconv.Quote(k.String())
	}
	return fmt.Sprintf("%v", k)
}

// addressable returns v itself if it is addressable, else a copy that is, so
// that field can reach its unexported fields.
func addressable(v reflect.Value) reflect.Value {
	if v.CanAddr() {
		return v
	}
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	return c
}

// field returns field i of the addressable struct v. reflect refuses to hand
// out the value of an unexported field (Interface, Set, method calls), which
// comparing a time.Time or copying a struct needs, so such a field is read
// through its address instead. Nothing is written through it.
func field(v reflect.Value, i int) reflect.Value {
	f := v.Field(i)
	if f.CanInterface() {
		return f
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}
