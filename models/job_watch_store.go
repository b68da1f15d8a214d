package models

import (
	"context"

	"github.com/shotflow/shotflow/models/status"
)

// JobRun names one run of a job.
type JobRun struct {
	JobID string
	Run   int
}

// JobRunEnd is how a job run ended.
type JobRunEnd struct {
	JobID  string
	Run    int
	Status string
}

// EndedJobRuns returns, of the named runs of the order's jobs, those that have ended, in the order
// named: a run whose row is terminal on that run ends with the row's status. A job that has moved
// on to a later run ended the named one failed, the only status of a launched run that may run
// again (RetryJob takes failed and expired jobs; a launched run never expires). A job that is not
// the order's (or no longer exists) is reported ended failed, so that no order waits for it forever.
func (s *Store) EndedJobRuns(ctx context.Context, orderID string, runs []JobRun) ([]JobRunEnd, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.JobID
	}
	var rows []Job
	err := s.conn(ctx).Select("id", "run", "status").Where("order_id = ? AND id IN ?", orderID, ids).Find(&rows).Error
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Job, len(rows))
	for _, j := range rows {
		byID[j.ID] = j
	}
	var out []JobRunEnd
	for _, r := range runs {
		j, ok := byID[r.JobID]
		switch {
		case !ok || j.Run > r.Run:
			out = append(out, JobRunEnd{JobID: r.JobID, Run: r.Run, Status: status.JobFailed})
		case j.Run == r.Run && status.IsTerminalJob(j.Status):
			out = append(out, JobRunEnd{JobID: r.JobID, Run: r.Run, Status: j.Status})
		}
	}
	return out, nil
}
