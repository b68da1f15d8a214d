// Package workflows holds shotflow's deterministic workflow code: OrderWorkflow runs one order and
// starts one JobWorkflow child per job; JobWorkflow owns the attempts, retries and credit
// settlement of one job.
package workflows

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// OrderWorkflowID returns the workflow ID for an order.
func OrderWorkflowID(orderID string) string { return "order/" + orderID }

// JobWorkflowID returns the workflow ID for run number run of a job (run 1 is the first).
func JobWorkflowID(jobID string, run int) string {
	if run <= 1 {
		return "job/" + jobID
	}
	return fmt.Sprintf("job/%s/run-%d", jobID, run)
}

// Search attributes on every shotflow workflow, so operators can filter in the Temporal UI
// (for example: ShotflowInstallationID = "…" AND ShotflowErrorCategory = "RATE_LIMIT").
var (
	SAAccountID      = temporal.NewSearchAttributeKeyKeyword("ShotflowAccountID")
	SAInstallationID = temporal.NewSearchAttributeKeyKeyword("ShotflowInstallationID")
	SAOrderID        = temporal.NewSearchAttributeKeyKeyword("ShotflowOrderID")
	SAJobType        = temporal.NewSearchAttributeKeyKeyword("ShotflowJobType")
	SAJobStatus      = temporal.NewSearchAttributeKeyKeyword("ShotflowJobStatus")
	SAErrorCategory  = temporal.NewSearchAttributeKeyKeyword("ShotflowErrorCategory")
)

// SearchAttributeNames lists the Keyword search attributes a namespace must have registered.
var SearchAttributeNames = []string{
	SAAccountID.GetName(), SAInstallationID.GetName(), SAOrderID.GetName(),
	SAJobType.GetName(), SAJobStatus.GetName(), SAErrorCategory.GetName(), SAWaitingOn.GetName(),
}

// OrderSearchAttributes are the search attributes of an order's workflow at start.
func OrderSearchAttributes(in OrderInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(orderAttributeUpdates(in)...)
}

// jobSearchAttributes are the search attributes of a job's workflow at start.
func jobSearchAttributes(in OrderInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(append(orderAttributeUpdates(in), SAJobStatus.ValueSet("pending"))...)
}

func orderAttributeUpdates(in OrderInput) []temporal.SearchAttributeUpdate {
	updates := []temporal.SearchAttributeUpdate{
		SAAccountID.ValueSet(in.AccountID),
		SAOrderID.ValueSet(in.OrderID),
		SAJobType.ValueSet(in.JobType),
	}
	if in.InstallationID != "" {
		updates = append(updates, SAInstallationID.ValueSet(in.InstallationID))
	}
	return updates
}
