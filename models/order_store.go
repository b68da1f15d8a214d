package models

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models/status"
)

// orNotFound is err with gorm's missing row as ErrNotFound, the store's answer for it.
func orNotFound(err error) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ErrNotFound
	}
	return err
}

// PlaceOrder creates a new order, its jobs and their reservation and runs inTx, when not nil, in
// the same transaction (a savepoint when the store is in one): an error from inTx undoes the
// order. It returns ErrInsufficientCredits, and creates nothing, when the balance is short. Without
// inTx an order CreateOrder writes in one statement is that statement alone, in autocommit (see
// the package function PlaceOrder).
func (s *Store) PlaceOrder(ctx context.Context, order *Order, jobs []Job, inTx func(tx *Store) error) error {
	var fn func(tx *gorm.DB) error
	if inTx != nil {
		fn = func(tx *gorm.DB) error { return inTx(&Store{db: tx, inTx: true}) }
	}
	done, err := s.reserving(ctx, order.AccountID)
	if err != nil {
		return err
	}
	defer done()
	return PlaceOrder(s.conn(ctx), order, jobs, fn)
}

// OrderJobs returns the jobs of an order in order of position.
func (s *Store) OrderJobs(ctx context.Context, orderID string) ([]Job, error) {
	var jobs []Job
	err := s.conn(ctx).Where("order_id = ?", orderID).Order("position").Find(&jobs).Error
	return jobs, err
}

// AccountOrderFilter selects an account's orders (AccountOrders).
type AccountOrderFilter struct {
	AccountID string
	Status    string     // "" for any
	Since     *time.Time // only orders created after it; nil for any
	Limit     int
}

// AccountOrders returns the account's orders matching f, newest first by (created_at, id).
func (s *Store) AccountOrders(ctx context.Context, f AccountOrderFilter) ([]Order, error) {
	q := s.conn(ctx).Where("account_id = ?", f.AccountID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Since != nil {
		q = q.Where("created_at > ?", f.Since.UTC())
	}
	var orders []Order
	err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&orders).Error
	return orders, err
}

// OrdersAIModels returns the distinct AI models of the jobs of the orders, by order ID, in one
// query.
func (s *Store) OrdersAIModels(ctx context.Context, orderIDs []string) (map[string][]string, error) {
	var rows []struct {
		OrderID string
		AIModel string `gorm:"column:ai_model"`
	}
	if err := s.conn(ctx).Model(&Job{}).Distinct("order_id", "ai_model").Where("order_id IN ?", orderIDs).Find(&rows).Error; err != nil {
		return nil, err
	}
	byOrder := map[string][]string{}
	for _, r := range rows {
		byOrder[r.OrderID] = append(byOrder[r.OrderID], r.AIModel)
	}
	return byOrder, nil
}

// AccountOrder loads an order of the account; ErrNotFound when it does not exist or belongs to
// another account.
func (s *Store) AccountOrder(ctx context.Context, accountID, orderID string) (*Order, error) {
	var o Order
	if err := s.conn(ctx).Where("id = ? AND account_id = ?", orderID, accountID).Take(&o).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &o, nil
}

// InstallationOrder loads an order of the installation; ErrNotFound when it does not exist or
// belongs to another installation.
func (s *Store) InstallationOrder(ctx context.Context, installationID, orderID string) (*Order, error) {
	var o Order
	if err := s.conn(ctx).Where("id = ? AND installation_id = ?", orderID, installationID).Take(&o).Error; err != nil {
		return nil, orNotFound(err)
	}
	return &o, nil
}

// FirstOutputsOfCompletedJobs returns the first output file (position 0) of each completed job of
// the order that is still stored, in one query.
func (s *Store) FirstOutputsOfCompletedJobs(ctx context.Context, orderID string) ([]Asset, error) {
	db := s.conn(ctx)
	var outputs []Asset
	err := db.Where("job_id IN (?) AND kind = ? AND position = 0 AND purged_at IS NULL",
		db.Model(&Job{}).Select("id").Where("order_id = ? AND status = ?", orderID, status.JobCompleted),
		AssetKindOutput).Find(&outputs).Error
	return outputs, err
}

// CreateReferenceItems inserts the items of the kind an order creates beside its jobs (ideas of
// sceneries or fashion models), one statement each, filling IDs and timestamps when empty; run it
// in the order's transaction (PlaceOrder's inTx).
func (s *Store) CreateReferenceItems(ctx context.Context, kind ReferenceKind, items []ReferenceItem) error {
	db := s.conn(ctx)
	for i := range items {
		if err := CreateReferenceItem(db, kind, &items[i]); err != nil {
			return err
		}
	}
	return nil
}

// LiveProductsWithApprovedPackshots returns, in one query, the installation's live products of the
// refs by ref, each with the approved packshots its jobs can start from (the latest, and the latest
// of each asset of named); see the package function of that name.
func (s *Store) LiveProductsWithApprovedPackshots(ctx context.Context, installationID string, refs, named []string) (map[string]*ApprovedProduct, error) {
	return LiveProductsWithApprovedPackshots(s.conn(ctx), installationID, refs, named)
}

// PackshotJobInput loads what a session's packshot job starts from: the installation's live
// product of productRef and its upload uploadID (an asset of kind upload, in any status). It
// returns ErrNotFound with a nil product when the product is not in the catalog, and ErrNotFound
// with the product when the upload is not the installation's.
func (s *Store) PackshotJobInput(ctx context.Context, installationID, productRef, uploadID string) (*Product, *Asset, error) {
	db := s.conn(ctx)
	product, err := LiveProductByRef(db, installationID, productRef)
	if err != nil {
		return nil, nil, err
	}
	var upload Asset
	err = db.Where("id = ? AND installation_id = ? AND kind = ?", uploadID, installationID, AssetKindUpload).Take(&upload).Error
	if err != nil {
		return product, nil, orNotFound(err)
	}
	return product, &upload, nil
}

// AccountProductPhoto loads a product photo of the account with its product and its upload, in
// three queries; ErrNotFound when the photo does not exist, belongs to another account, or it or
// its product is deleted.
func (s *Store) AccountProductPhoto(ctx context.Context, accountID, photoID string) (*ProductImage, *Product, *Asset, error) {
	db := s.conn(ctx)
	var (
		image   ProductImage
		product Product
		upload  Asset
	)
	if err := db.Where("id = ? AND account_id = ? AND deleted_at IS NULL", photoID, accountID).Take(&image).Error; err != nil {
		return nil, nil, nil, orNotFound(err)
	}
	if err := db.Where("id = ? AND deleted_at IS NULL", image.ProductID).Take(&product).Error; err != nil {
		return nil, nil, nil, orNotFound(err)
	}
	if err := db.Where("id = ?", image.AssetID).Take(&upload).Error; err != nil {
		return nil, nil, nil, err
	}
	return &image, &product, &upload, nil
}

// LatestApprovedPackshot returns the product photo's own latest accepted packshot that is neither
// deleted nor archived (by voting_at, undated last on both databases, then created_at and id);
// ErrNotFound when it has none.
func (s *Store) LatestApprovedPackshot(ctx context.Context, accountID, photoID string) (*Packshot, error) {
	var packshot Packshot
	err := s.conn(ctx).Where("account_id = ? AND source_image_id = ? AND voting = ? AND deleted_at IS NULL AND archived_at IS NULL",
		accountID, photoID, VotingAccepted).Order("voting_at IS NULL, voting_at DESC, created_at DESC, id DESC").Take(&packshot).Error
	if err != nil {
		return nil, orNotFound(err)
	}
	return &packshot, nil
}
