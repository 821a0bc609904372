package load

import (
	"encoding/json"
	"math/rand/v2"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// ProfileDevice is the device of a profile as a limit server stores and
// answers it: one generated Windows device, as JSON, about the size of
// the device the service keeps with each profile.
func ProfileDevice() []byte {
	tpl, _ := profile.TemplateByID("tpl_chrome_win_us")
	fp := profile.Generate(tpl, "", rand.New(rand.NewPCG(42, 42)))
	doc, _ := json.Marshal(fp) // plain values always marshal
	return doc
}
