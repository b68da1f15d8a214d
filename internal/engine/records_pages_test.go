package engine_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shotflow/shotflow/internal/engine"
	"github.com/shotflow/shotflow/models"
)

// RecordListQuery reads limit and starting_after as the external record lists take them: each
// once, limit 1–MaxRecordPage (MaxRecordPage when left out), neither empty.
func TestRecordListQuery(t *testing.T) {
	id := models.NewID()
	for raw, want := range map[string]engine.RecordPage{
		"":                                {},
		"limit=1":                         {Limit: 1},
		"limit=1000&starting_after=" + id: {Limit: 1000, StartingAfter: id},
		"statusFilter=approved&other=x":   {},
	} {
		q, err := url.ParseQuery(raw)
		require.NoError(t, err)
		page, err := engine.RecordListQuery(q)
		require.NoError(t, err, raw)
		assert.Equal(t, want, page, raw)
	}
	for raw, field := range map[string]string{
		"limit=0": "limit", "limit=1001": "limit", "limit=": "limit", "limit=x": "limit", "limit=1&limit=1": "limit",
		"starting_after=": "starting_after", "starting_after=" + id + "&starting_after=" + id: "starting_after",
	} {
		q, err := url.ParseQuery(raw)
		require.NoError(t, err)
		_, err = engine.RecordListQuery(q)
		e, ok := engine.As(err)
		require.True(t, ok, "%s: want a refusal, got %v", raw, err)
		assert.Equal(t, engine.KindInvalid, e.Kind, raw)
		assert.Equal(t, field, e.Field, raw)
	}
}

// The record list use cases check their page themselves, before reading anything, whoever calls
// them: a limit out of range and a cursor that is not a UUID are refused naming the parameter.
func TestRecordListsCheckTheirPage(t *testing.T) {
	f := newAccountFixture(t)
	ctx := context.Background()
	list := map[string]func(engine.RecordPage) error{
		"photos": func(p engine.RecordPage) error {
			_, _, err := f.eng.Records.ListAccountPhotos(ctx, f.mine, p)
			return err
		},
		"models": func(p engine.RecordPage) error {
			_, _, err := f.eng.Records.ListAccountReferenceItems(ctx, f.mine, engine.FashionModels, false, p)
			return err
		},
		"packshots": func(p engine.RecordPage) error {
			_, _, err := f.eng.Records.ListAccountPackshots(ctx, f.mine, false, p)
			return err
		},
		"shoots": func(p engine.RecordPage) error {
			_, _, err := f.eng.Records.ListAccountShoots(ctx, f.mine, false, "", p)
			return err
		},
		"videos": func(p engine.RecordPage) error {
			_, _, err := f.eng.Records.ListAccountVideos(ctx, f.mine, p)
			return err
		},
	}
	for name, call := range list {
		for _, limit := range []int{-1, engine.MaxRecordPage + 1} {
			refusal(t, call(engine.RecordPage{Limit: limit}), engine.KindInvalid, "limit", "must be an integer from 1 to 1000 (the default).")
		}
		refusal(t, call(engine.RecordPage{StartingAfter: "nope"}), engine.KindInvalid, "starting_after",
			"must be the id (a UUID) of the last record of the previous page.")
		refusal(t, call(engine.RecordPage{StartingAfter: models.NewID()}), engine.KindInvalid, "starting_after",
			"names no record of this list; pass the id of the last record of the previous page, or leave it out for the first page.")
		assert.NoError(t, call(engine.RecordPage{Limit: engine.MaxRecordPage}), name)
	}
}
