package team_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
)

func TestCheckQuota(t *testing.T) {
	if err := team.CheckQuota(19, 20, "webhook endpoints"); err != nil {
		t.Fatalf("19 of 20: %v", err)
	}
	if err := team.CheckQuota(5, 0, "webhook endpoints"); err != nil {
		t.Fatalf("no quota: %v", err)
	}
	err := team.CheckQuota(20, 20, "webhook endpoints")
	var de *domain.Error
	if !domain.IsKind(err, domain.KindValidation) || !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "quota" {
		t.Fatalf("20 of 20: %#v, want a validation error on quota", err)
	}
	if !strings.Contains(de.Message, "at most 20 webhook endpoints per team") {
		t.Fatalf("message %q does not name the quota", de.Message)
	}
}
