package v1alpha1

// Metadata keys ops-apiserver sets on the objects it creates (upgrade
// operations, backups, restores, vmcluster operations, HelmReleases), the
// same on every kind. Only ops-apiserver reads them (the initiatedBy of its
// answers, idempotent replays, the lists' selectors); a GitOps user's
// object may carry them too.
const (
	// AnnotationInitiatedBy names the authenticated caller of the request
	// that created the object.
	AnnotationInitiatedBy = "ops.observability.tidbcloud.com/initiated-by"
	// AnnotationIdempotencyKey holds the Idempotency-Key of the create
	// request: a retried request finds the object it created instead of
	// creating another.
	AnnotationIdempotencyKey = "ops.observability.tidbcloud.com/idempotency-key"
	// LabelVMClusterID is the id (HelmRelease UID) of the vmcluster an
	// object is for; the lists select on it.
	LabelVMClusterID = "ops.observability.tidbcloud.com/vmcluster-id"
)
