package contract

// ErrTypeDependencyUnavailable is the ApplicationError type of an activity that could not do its
// work because the database or the blob store could not be reached. Its detail names the
// dependency (DependencyDatabase, DependencyBlobStore). It is not an attempt and not a result: the
// workflow waits with a capped backoff and runs the same step again, for as long as the outage
// lasts (workflows/outage.go).
const ErrTypeDependencyUnavailable = "DEPENDENCY_UNAVAILABLE"

// The dependencies an activity can wait for, as ErrTypeDependencyUnavailable details and as the
// value of the ShotflowWaitingOn search attribute.
const (
	// DependencyDatabase is the PostgreSQL database.
	DependencyDatabase = "database"
	// DependencyBlobStore is the store of uploaded and generated files.
	DependencyBlobStore = "blob store"
	// DependencyTemporal is Temporal itself: a workflow names it while it runs again an attempt
	// that Temporal's outage cut short (workflows/outage.go, lateTimeout).
	DependencyTemporal = "temporal"
)
