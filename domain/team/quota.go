package team

import (
	"strconv"

	"github.com/profilesvc/profilesvc/domain"
)

// QuotaReached is the refusal of a change that would take a team past a
// quota of limit things (such as "webhook endpoints"): a validation error
// on the field "quota", so that clients tell it from bad input.
func QuotaReached(limit int, things string) error {
	bound := "at most " + strconv.Itoa(limit) + " " + things + " per team"
	return &domain.Error{
		Kind:    domain.KindValidation,
		Message: "quota reached: " + bound,
		Fields:  []domain.FieldIssue{{Field: "quota", Issue: bound + "; remove one first"}},
	}
}

// CheckQuota refuses adding one more thing to a team that holds n of them
// under a quota of limit; a limit below one is no quota.
func CheckQuota(n, limit int, things string) error {
	if limit > 0 && n >= limit {
		return QuotaReached(limit, things)
	}
	return nil
}
