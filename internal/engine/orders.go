package engine

import (
	"context"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/shotflow/shotflow/models"
	"github.com/shotflow/shotflow/models/status"
)

// OrderFilter selects an account's orders.
type OrderFilter struct {
	AccountID string
	Status    string     // "" for any
	Since     *time.Time // only orders created after it; nil for any
	Limit     int
}

// ListAccountOrders returns the account's orders matching f, newest first, with the distinct
// provider/model IDs of each order's jobs by order ID.
func (e *Orders) ListAccountOrders(ctx context.Context, f OrderFilter) ([]models.Order, map[string][]string, error) {
	db := e.cfg.DB.WithContext(ctx)
	q := db.Where("account_id = ?", f.AccountID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Since != nil {
		q = q.Where("created_at > ?", f.Since.UTC())
	}
	var orders []models.Order
	if err := q.Order("created_at DESC, id DESC").Limit(f.Limit).Find(&orders).Error; err != nil {
		return nil, nil, err
	}
	generators := map[string][]string{}
	if len(orders) == 0 {
		return orders, generators, nil
	}
	ids := make([]string, len(orders))
	for i, o := range orders {
		ids[i] = o.ID
	}
	var rows []struct {
		OrderID string
		AIModel string `gorm:"column:ai_model"`
	}
	if err := db.Model(&models.Job{}).Distinct("order_id", "ai_model").Where("order_id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		generators[r.OrderID] = append(generators[r.OrderID], r.AIModel)
	}
	return orders, generators, nil
}

// AccountOrder is an account's order with its jobs in order of position and, for each completed
// job, its first output file still stored.
type AccountOrder struct {
	Order   *models.Order
	Jobs    []models.Job
	Outputs map[string]models.Asset // by job ID
}

// FindAccountOrder returns an order of the account; KindNotFound when it does not exist or belongs
// to another account.
func (e *Orders) FindAccountOrder(ctx context.Context, accountID, orderID string) (AccountOrder, error) {
	db := e.cfg.DB.WithContext(ctx)
	var order models.Order
	err := db.Where("id = ? AND account_id = ?", orderID, accountID).Take(&order).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return AccountOrder{}, refuse(KindNotFound, "", "", "Order not found.")
	}
	if err != nil {
		return AccountOrder{}, err
	}
	jobs, err := models.OrderJobs(db, order.ID)
	if err != nil {
		return AccountOrder{}, err
	}
	var outputs []models.Asset
	if err := db.Where("job_id IN (?) AND kind = ? AND position = 0 AND purged_at IS NULL",
		db.Model(&models.Job{}).Select("id").Where("order_id = ? AND status = ?", order.ID, status.JobCompleted),
		models.AssetKindOutput).Find(&outputs).Error; err != nil {
		return AccountOrder{}, err
	}
	outputOf := map[string]models.Asset{}
	for _, a := range outputs {
		outputOf[*a.JobID] = a
	}
	return AccountOrder{Order: &order, Jobs: jobs, Outputs: outputOf}, nil
}
