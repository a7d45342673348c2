/*
Copyright 2026 The ops-server Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// GroupName is the API group of every ops-server custom resource.
	GroupName = "ops.observability.tidbcloud.com"
	// Version is the API version of this package.
	Version = "v1alpha1"
)

var (
	// GroupVersion is the group and version of this package's types.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

	// SchemeBuilder registers this package's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Resource returns the group-qualified resource for an unqualified resource
// name, e.g. Resource("clusterbackups").
func Resource(resource string) schema.GroupResource {
	return GroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ClusterUpgradeOperation{},
		&ClusterUpgradeOperationList{},
		&ClusterBackup{},
		&ClusterBackupList{},
		&ClusterRestore{},
		&ClusterRestoreList{},
		&ClusterBackupSchedule{},
		&ClusterBackupScheduleList{},
		&ObservabilityStack{},
		&ObservabilityStackList{},
		&VMClusterOperation{},
		&VMClusterOperationList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
