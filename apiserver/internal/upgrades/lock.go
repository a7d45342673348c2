package upgrades

// One active upgrade per cluster, on the REST path.
//
// At most one non-terminal ClusterUpgradeOperation may exist per
// (cloudProvider, region, k8sClusterName). An in-process mutex cannot
// promise that: ops-apiserver runs several replicas, and its informer cache
// may not have seen an operation created a millisecond ago by another one.
// So a create takes a per-cluster lock object in the API server first: a
// coordination.k8s.io Lease named upgrade-lock-<first 16 hex digits of
// sha256(provider/region/cluster)> in the operations' namespace, whose
// holderIdentity is the name of the operation about to be created.
//
//  1. Read the Lease from the API server (not the cache). Absent: create it
//     holding our name; AlreadyExists means another request won the race,
//     start over.
//  2. Held by another name: that operation is read from the API server.
//     Non-terminal: the answer is 409 naming it. Terminal, or gone: the
//     lock is free. Not created yet: the holder is still between taking the
//     lock and creating its operation, so the lock is busy while the
//     claim is unconfirmed (renewTime unset) and younger than
//     claimGrace; an older unconfirmed claim is a request that died
//     half-way and the lock is free.
//  3. Free: Update the Lease to hold our name. The update carries the
//     resourceVersion we read (optimistic concurrency): of two requests
//     that both saw it free, one update succeeds and the other conflicts
//     and starts over, where it finds the winner's claim.
//  4. Holding the lock, check the operations of the cluster in the
//     namespace (created with kubectl or GitOps, which take no lock): a
//     non-terminal one is a 409 naming it, and the lock is released. They
//     are read from the informer cache, each active one confirmed with a
//     read from the API server (see activeOf).
//  5. Create the operation, then confirm the claim (set renewTime) with
//     another optimistic update. A conflict there means our claim was
//     taken over as dead, which only happens when the create took longer
//     than claimGrace: the operation is deleted again and the request
//     answers 409.
//
// The operator enforces the same rule for every operation however it was
// created (operator/internal/exclusion): a second operation that slips past
// this lock (applied with kubectl a moment before) waits in phase Pending.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidbcloud/ops-server/apiserver/internal/apierror"
	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

const (
	// claimGrace is how long an unconfirmed claim on a cluster's lock
	// holds without its operation existing (a create takes milliseconds).
	claimGrace = 30 * time.Second
	// lockAttempts bounds the optimistic retries of one request.
	lockAttempts = 8
	// holderWaitSteps × holderWaitStep bound the wait for the operation of
	// a fresh claim to appear.
	holderWaitSteps = 20
	holderWaitStep  = 50 * time.Millisecond
	// ReasonUpgradeActive is the ErrorInfo reason of the 409 answered
	// while another operation of the cluster is not finished.
	ReasonUpgradeActive = "UPGRADE_ALREADY_ACTIVE"
	// annotationLockCluster records on a Lease the cluster it locks.
	annotationLockCluster = "ops.observability.tidbcloud.com/cluster"
)

// clusterKey is provider/region/name.
func clusterKey(o *opsv1.ClusterUpgradeOperation) string {
	return string(o.Spec.CloudProvider) + "/" + o.Spec.Region + "/" + o.Spec.K8sClusterName
}

// lockName is the Lease of a cluster.
func lockName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "upgrade-lock-" + hex.EncodeToString(sum[:])[:16]
}

// randomName is an operation name for a request without idempotency key:
// the name must be known before the create, to be the lock's holder.
func randomName() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "upgrade-" + string(b)
}

// activeError is the 409 naming the active operation.
func activeError(key string, active *opsv1.ClusterUpgradeOperation, name string) error {
	if active == nil {
		return apierror.Aborted(ReasonUpgradeActive,
			"cluster %s already has an upgrade operation being created (%s); wait for it to finish or cancel it", key, name).
			WithMetadata("activeOperationName", name)
	}
	phase := active.Status.Phase
	if phase == "" {
		phase = opsv1.UpgradePhasePending
	}
	return apierror.Aborted(ReasonUpgradeActive,
		"cluster %s already has an active upgrade operation %s (id %s, phase %s); wait for it to finish or cancel it",
		key, active.Name, active.UID, phase).
		WithMetadata("activeOperationId", string(active.UID)).
		WithMetadata("activeOperationName", active.Name)
}

// lock takes the cluster's lock for obj (named, not yet created) and
// returns the Lease as written, or the 409 naming the active operation.
func (s *Service) lock(ctx context.Context, obj *opsv1.ClusterUpgradeOperation) (*coordinationv1.Lease, error) {
	key := clusterKey(obj)
	nn := types.NamespacedName{Namespace: s.Namespace, Name: lockName(key)}
	for range lockAttempts {
		now := metav1.NewMicroTime(time.Now())
		lease := &coordinationv1.Lease{}
		err := s.Writer.Get(ctx, nn, lease)
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name,
					Annotations: map[string]string{annotationLockCluster: key}},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: &obj.Name, AcquireTime: &now,
					LeaseDurationSeconds: new(int32(claimGrace / time.Second))},
			}
			if err := s.Writer.Create(ctx, lease); err != nil {
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				return nil, apierror.FromKubernetes(err)
			}
		case err != nil:
			return nil, apierror.FromKubernetes(err)
		default:
			if holder := ptrString(lease.Spec.HolderIdentity); holder != "" && holder != obj.Name {
				if err := s.checkHolder(ctx, key, lease, holder); err != nil {
					return nil, err
				}
			}
			lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = &obj.Name, &now, nil
			lease.Spec.LeaseDurationSeconds = new(int32(claimGrace / time.Second))
			if err := s.Writer.Update(ctx, lease); err != nil {
				if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
					continue
				}
				return nil, apierror.FromKubernetes(err)
			}
		}
		active, err := s.activeOf(ctx, obj)
		if err != nil {
			s.unlock(ctx, lease, obj.Name)
			return nil, err
		}
		if active != nil {
			s.unlock(ctx, lease, obj.Name)
			return nil, activeError(key, active, active.Name)
		}
		return lease, nil
	}
	return nil, apierror.Aborted(apierror.ReasonConflict, "too many concurrent upgrade requests for cluster %s; retry the request", key)
}

// checkHolder returns the 409 when the lock's holder is active (see the
// file comment), nil when the lock is free.
func (s *Service) checkHolder(ctx context.Context, key string, lease *coordinationv1.Lease, holder string) error {
	held := &opsv1.ClusterUpgradeOperation{}
	nn := types.NamespacedName{Namespace: s.Namespace, Name: holder}
	err := s.Writer.Get(ctx, nn, held)
	fresh := func() bool {
		return lease.Spec.RenewTime == nil && lease.Spec.AcquireTime != nil && time.Since(lease.Spec.AcquireTime.Time) < claimGrace
	}
	// A fresh claim whose operation is not there yet: its create is in
	// flight; wait a moment for it, so that the 409 can name its id.
	for i := 0; i < holderWaitSteps && apierrors.IsNotFound(err) && fresh(); i++ {
		select {
		case <-ctx.Done():
			return apierror.FromKubernetes(ctx.Err())
		case <-time.After(holderWaitStep):
		}
		err = s.Writer.Get(ctx, nn, held)
	}
	switch {
	case err == nil:
		if !isActive(held) {
			return nil
		}
		return activeError(key, held, holder)
	case apierrors.IsNotFound(err):
		if fresh() {
			return activeError(key, nil, holder)
		}
		return nil
	default:
		return apierror.FromKubernetes(err)
	}
}

// activeOf returns the oldest non-terminal operation of obj's cluster in
// the namespace other than obj. The operations of the cluster's name come
// from Reader (the informer cache, through its spec.k8sClusterName index;
// a plain client filters on the CRD's selectable field of that path), so a
// create costs no list of the namespace: a consistent list from the API
// server waits for its watch cache to catch up, up to ~100 ms. Each one
// the cache shows active is read again from the API server, so one that
// has just finished does not refuse the request. An operation applied
// outside the API an instant before, that this replica's cache has not
// seen yet, is not found here: ops-operator's exclusion holds the later
// one Pending (see the file comment).
func (s *Service) activeOf(ctx context.Context, obj *opsv1.ClusterUpgradeOperation) (*opsv1.ClusterUpgradeOperation, error) {
	reader := s.Reader
	if reader == nil {
		reader = s.Writer
	}
	list := &opsv1.ClusterUpgradeOperationList{}
	if err := reader.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingFields{clusterIndex: obj.Spec.K8sClusterName}); err != nil {
		return nil, apierror.FromKubernetes(err)
	}
	key := clusterKey(obj)
	var active *opsv1.ClusterUpgradeOperation
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == obj.Name || clusterKey(o) != key || !isActive(o) {
			continue
		}
		if active == nil || o.CreationTimestamp.Before(&active.CreationTimestamp) ||
			o.CreationTimestamp.Equal(&active.CreationTimestamp) && o.Name < active.Name {
			live := &opsv1.ClusterUpgradeOperation{}
			err := s.Writer.Get(ctx, client.ObjectKeyFromObject(o), live)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, apierror.FromKubernetes(err)
			case isActive(live):
				active = live
			}
		}
	}
	return active, nil
}

// isActive says an operation holds its cluster: not finished, not being
// deleted.
func isActive(o *opsv1.ClusterUpgradeOperation) bool {
	return !o.Status.Phase.IsTerminal() && o.DeletionTimestamp == nil
}

// confirm marks the claim of a created operation; false when the claim was
// taken over meanwhile.
func (s *Service) confirm(ctx context.Context, lease *coordinationv1.Lease) (bool, error) {
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.RenewTime = &now
	if err := s.Writer.Update(ctx, lease); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("confirming the upgrade lock %s: %w", lease.Name, err)
	}
	return true, nil
}

// unlock releases a claim that will not be confirmed (best effort: an
// unconfirmed claim expires after claimGrace anyway).
func (s *Service) unlock(ctx context.Context, lease *coordinationv1.Lease, holder string) {
	if ptrString(lease.Spec.HolderIdentity) != holder {
		return
	}
	lease.Spec.HolderIdentity, lease.Spec.AcquireTime, lease.Spec.RenewTime = nil, nil, nil
	_ = s.Writer.Update(ctx, lease)
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
