package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// A session's scenery_id and model_id must name a scenery and a fashion model the account may use:
// its own usable items or the marketplace's. A reference that is not a UUID, does not exist, is
// not usable or is another account's is refused alike, naming the field; an upper-case ID is the
// same ID and is stored as the catalog spells it.
func TestPlanSessionReferences(t *testing.T) {
	f := newSessionFixture(t, 1000)
	otherAccount := models.NewID()
	now := time.Now().UTC()
	require.NoError(t, f.db.Create(&models.Account{ID: otherAccount, Name: "other", CreatedAt: now, UpdatedAt: now}).Error)
	item := func(kind models.ReferenceKind, owner *string, status string) string {
		it := models.ReferenceItem{AccountID: owner, Name: "item", Status: status}
		require.NoError(t, models.CreateReferenceItem(f.db, kind, &it))
		return it.ID
	}
	own := f.inst.AccountID
	scenery := item(models.KindScenery, &own, models.RefStatusDone)
	marketModel := item(models.KindFashionModel, nil, models.RefStatusDone)
	foreignScenery := item(models.KindScenery, &otherAccount, models.RefStatusDone)
	pendingModel := item(models.KindFashionModel, &own, models.RefStatusInProgress)

	with := func(sceneryID, modelID string) engine.SessionRequest {
		r := f.request("", shoot("ok", 1))
		r.Config.SceneryID, r.Config.ModelID = sceneryID, modelID
		return r
	}
	for _, tc := range []struct {
		name    string
		req     engine.SessionRequest
		field   string
		message string
	}{
		{"scenery not a UUID", with("white-marble", ""), "session_config.scenery_id",
			`"white-marble" is not a valid id; use an id listed by GET /sceneries.`},
		{"unknown scenery", with(models.NewID(), ""), "session_config.scenery_id", "is not a scenery this account may use; see GET /sceneries."},
		{"another account's scenery", with(foreignScenery, ""), "session_config.scenery_id",
			`"` + foreignScenery + `" is not a scenery this account may use; see GET /sceneries.`},
		{"a fashion model as scenery", with(marketModel, ""), "session_config.scenery_id", "is not a scenery this account may use"},
		{"model not a UUID", with("", "42"), "session_config.model_id", `"42" is not a valid id; use an id listed by GET /models.`},
		{"unknown model", with(scenery, models.NewID()), "session_config.model_id", "is not a fashion model this account may use; see GET /models."},
		{"model still in progress", with("", pendingModel), "session_config.model_id", "is not a fashion model this account may use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), tc.req)
			assert.Nil(t, order)
			assert.Nil(t, jobs)
			e, ok := engine.As(err)
			require.True(t, ok, "want an engine refusal, got %v", err)
			assert.Equal(t, engine.KindInvalid, e.Kind)
			assert.Equal(t, tc.field, e.Field)
			assert.Contains(t, e.Message, tc.message)
		})
	}

	order, jobs, err := f.eng.Sessions.PlanSession(t.Context(), with(strings.ToUpper(scenery), marketModel))
	require.NoError(t, err)
	assert.Len(t, jobs, 1)
	assert.JSONEq(t, `{"aspect_ratio":"1:1","scenery_id":"`+scenery+`","model_id":"`+marketModel+`"}`, string(order.SessionConfig))
}
