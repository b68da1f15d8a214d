package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/testdb"
)

// createAccountIn inserts an account named name through the store (or its transaction).
func createAccountIn(ctx context.Context, s *models.Store, name string) error {
	now := time.Now().UTC()
	return models.StoreConn(ctx, s).Create(&models.Account{ID: models.NewID(), Name: name, Plan: "standard", CreatedAt: now, UpdatedAt: now}).Error
}

func accountNamed(t *testing.T, db *gorm.DB, name string) bool {
	t.Helper()
	var n int64
	if err := db.Model(&models.Account{}).Where("name = ?", name).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// Tx commits what fn writes when fn succeeds and rolls all of it back when fn fails; a Tx within
// it is a savepoint, whose failure undoes only its own writes.
func TestStoreTxCommitsOrRollsBack(t *testing.T) {
	t.Parallel()
	testdb.Dialects(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		s := models.NewStore(db)
		err := s.Tx(ctx, func(tx *models.Store) error {
			return errors.Join(createAccountIn(ctx, tx, "one"), createAccountIn(ctx, tx, "two"))
		})
		if err != nil || !accountNamed(t, db, "one") || !accountNamed(t, db, "two") {
			t.Fatalf("committed Tx: err %v, accounts one %v, two %v", err, accountNamed(t, db, "one"), accountNamed(t, db, "two"))
		}

		failed := errors.New("fn failed")
		err = s.Tx(ctx, func(tx *models.Store) error {
			if err := createAccountIn(ctx, tx, "undone"); err != nil {
				return err
			}
			return failed
		})
		if !errors.Is(err, failed) || accountNamed(t, db, "undone") {
			t.Fatalf("failed Tx: err %v, its write kept %v", err, accountNamed(t, db, "undone"))
		}

		err = s.Tx(ctx, func(tx *models.Store) error {
			if err := createAccountIn(ctx, tx, "outer"); err != nil {
				return err
			}
			inner := tx.Tx(ctx, func(sp *models.Store) error {
				if err := createAccountIn(ctx, sp, "inner"); err != nil {
					return err
				}
				return failed
			})
			if !errors.Is(inner, failed) {
				t.Errorf("inner Tx = %v, want its fn's error", inner)
			}
			return nil
		})
		if err != nil || !accountNamed(t, db, "outer") || accountNamed(t, db, "inner") {
			t.Fatalf("outer Tx %v: outer kept %v, failed savepoint kept %v", err, accountNamed(t, db, "outer"), accountNamed(t, db, "inner"))
		}
	})
}

// Tx is one BEGIN … COMMIT on PostgreSQL, whatever fn writes in it.
func TestStoreTxIsOneTransaction(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, testdb.MigratedPostgresURL(t))
	ctx := context.Background()
	s := models.NewStore(db)
	stop := testdb.RecordStatements(db)
	err := s.Tx(ctx, func(tx *models.Store) error {
		return errors.Join(createAccountIn(ctx, tx, "a"), createAccountIn(ctx, tx, "b"))
	})
	statements := stop()
	if err != nil {
		t.Fatal(err)
	}
	if len(statements) != 4 || statements[0] != "BEGIN" || statements[3] != "COMMIT" ||
		!strings.HasPrefix(statements[1], `INSERT INTO "accounts"`) || !strings.HasPrefix(statements[2], `INSERT INTO "accounts"`) {
		t.Fatalf("statements:\n%s", strings.Join(statements, "\n"))
	}
}
