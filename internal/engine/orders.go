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
func (e *Orders) ListAccountOrders(ctx context.Context, f OrderFilter) ([]Order, map[string][]string, error) {
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
	views := viewsOf(orders, orderOf)
	if len(orders) == 0 {
		return views, generators, nil
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
	return views, generators, nil
}

// AccountOrder is an account's order with its jobs in order of position; a completed job's
// Outputs hold its first output file while it is still stored, any other job's none.
type AccountOrder struct {
	Order Order
	Jobs  []Job
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
	outputOf := map[string][]models.Asset{}
	for _, a := range outputs {
		outputOf[*a.JobID] = []models.Asset{a}
	}
	o := AccountOrder{Order: orderOf(&order), Jobs: make([]Job, len(jobs))}
	for i := range jobs {
		o.Jobs[i] = jobOf(&jobs[i], outputOf[jobs[i].ID])
	}
	return o, nil
}
