package models_test

import (
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// A route that creates no order records its status, headers and body (a 204 has an empty body);
// the answer reads back as written, and a takeover of the expired row forgets all of it.
func TestIdempotencyAnswerWithHeadersAndNoOrder(t *testing.T) {
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		_, inst := idemInstallation(t, db)
		claim, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "h", time.Minute)
		if err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		if _, ok, err := claim.Answer(); ok || err != nil {
			t.Fatalf("a claim in progress has an answer: %v, %v", ok, err)
		}
		want := models.IdempotencyAnswer{Status: 200,
			Headers: map[string][]string{"Cache-Control": {"no-store"}, "Content-Type": {"application/json; charset=utf-8"}},
			Body:    []byte("{\"webhook_secret\":\"s\"}\n")}
		if err := models.RecordIdempotencyAnswer(db, claim, "", want); err != nil {
			t.Fatal(err)
		}
		row, err := models.GetIdempotencyKey(db, inst, "k")
		if err != nil {
			t.Fatal(err)
		}
		got, ok, err := row.Answer()
		if err != nil || !ok || !reflect.DeepEqual(got, want) || row.OrderID != nil {
			t.Fatalf("answer = %+v (%v, %v), order %v; want %+v and no order", got, ok, err, row.OrderID, want)
		}

		// A 204: no body, no headers.
		del, _, err := models.ClaimIdempotencyKey(db, inst, "d", "h", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := models.RecordIdempotencyAnswer(db, del, "", models.IdempotencyAnswer{Status: 204, Headers: map[string][]string{}}); err != nil {
			t.Fatal(err)
		}
		row, _ = models.GetIdempotencyKey(db, inst, "d")
		if got, ok, err := row.Answer(); err != nil || !ok || got.Status != 204 || len(got.Body) != 0 {
			t.Fatalf("answer of a 204 = %+v, %v, %v", got, ok, err)
		}

		// Once expired, the row is taken over as a fresh claim without the old answer.
		if err := db.Model(&models.IdempotencyKey{}).Where("idempotency_key = ?", "k").
			Update("expires_at", time.Now().UTC().Add(-time.Second)).Error; err != nil {
			t.Fatal(err)
		}
		fresh, claimed, err := models.ClaimIdempotencyKey(db, inst, "k", "h2", time.Minute)
		if err != nil || !claimed {
			t.Fatal(claimed, err)
		}
		row, _ = models.GetIdempotencyKey(db, inst, "k")
		if row.ResponseHeaders != nil || row.ResponseBody != nil || row.ResponseStatus != nil || row.ClaimToken != fresh.ClaimToken {
			t.Fatalf("taken-over row keeps its old answer: %+v", row)
		}
	})
}
