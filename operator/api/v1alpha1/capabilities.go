package v1alpha1

// What each cloud provider supports: the one table the validation (REST
// and the CRD's CEL rules, which must list the same providers), GET
// /ops/api/v1/providers and docs/providers/README.md (generated from it;
// a test fails on drift) read. The facts come from each provider's page
// in docs/providers and the cloud's API reference.

// ProviderCapabilities is what one provider supports.
// +kubebuilder:object:generate=false
type ProviderCapabilities struct {
	Provider CloudProvider `json:"name"`
	// Addons: clusterAddons may be set (ListAddons/UpdateAddon work).
	Addons bool `json:"addons"`
	// AddonResolveConflicts: clusterAddons[].resolveConflicts may be set.
	AddonResolveConflicts bool `json:"addonResolveConflicts"`
	// AddonCompatibility: the preflight checks addon versions against the
	// target Kubernetes version with the cloud's own data.
	AddonCompatibility bool `json:"addonCompatibility"`
	// InPlace and BlueGreen are the node-group strategies.
	InPlace   bool `json:"inPlace"`
	BlueGreen bool `json:"blueGreen"`
	// SurgeSettings says how an in-place node-group upgrade replaces
	// nodes (ops-server sets no surge of its own).
	SurgeSettings string `json:"surgeSettings"`
	// CancelRunningOperation says what cancelling an operation does to a
	// cloud operation already running.
	CancelRunningOperation string `json:"cancelRunningOperation"`
	// VersionFormat says which targetVersion the provider takes.
	VersionFormat string `json:"versionFormat"`
}

// Capabilities is the table, one row per CloudProvider.
var Capabilities = []ProviderCapabilities{
	{
		Provider: CloudProviderEKS, Addons: true, AddonResolveConflicts: true, AddonCompatibility: true, InPlace: true, BlueGreen: true,
		SurgeSettings:          "the managed node group's updateConfig (maxUnavailable or maxUnavailablePercentage)",
		CancelRunningOperation: "EKS cannot cancel an update: it finishes in the cloud, the operator polls it to the end",
		VersionFormat:          "a minor (1.30); a patch (1.30.1) is taken as given",
	},
	{
		Provider: CloudProviderGKE, InPlace: true, BlueGreen: true,
		SurgeSettings:          "the node pool's upgradeSettings (maxSurge, maxUnavailable, or GKE's own blue-green strategy)",
		CancelRunningOperation: "not cancelled: GKE's operations.cancel is not used; the operation finishes, the operator polls it to the end",
		VersionFormat:          "a minor (1.30), a patch (1.30.5) or a GKE version (1.30.5-gke.1014001)",
	},
	{
		Provider: CloudProviderAKS, InPlace: true, BlueGreen: true,
		SurgeSettings:          "the agent pool's upgradeSettings.maxSurge",
		CancelRunningOperation: "not cancelled: AKS's abort is not used; the operation finishes, the operator polls it to the end",
		VersionFormat:          "a minor (1.30) or a patch (1.30.5)",
	},
	{
		Provider: CloudProviderACK, Addons: true, InPlace: true, BlueGreen: true,
		SurgeSettings:          "the node pool's upgrade policy (ACK's defaults)",
		CancelRunningOperation: "not cancelled: ACK's CancelTask is not used yet; the task finishes, the operator polls it to the end",
		VersionFormat:          "a minor (1.31) or patch resolved at request time to the newest ACK version offered, or a full ACK version (1.31.1-aliyun.1)",
	},
	{
		Provider: CloudProviderMock, Addons: true, AddonResolveConflicts: true, InPlace: true, BlueGreen: true,
		SurgeSettings:          "none: a simulated group's Nodes change version at once",
		CancelRunningOperation: "the simulated operation finishes; the operator polls it to the end",
		VersionFormat:          "a minor (1.30) or a patch (1.30.1)",
	},
}

// CapabilitiesOf returns the row of p.
func CapabilitiesOf(p CloudProvider) (ProviderCapabilities, bool) {
	for _, c := range Capabilities {
		if c.Provider == p {
			return c, true
		}
	}
	return ProviderCapabilities{}, false
}

// SupportsAddonResolveConflicts reports whether
// clusterAddons[].resolveConflicts may be set for the provider.
func (p CloudProvider) SupportsAddonResolveConflicts() bool {
	c, ok := CapabilitiesOf(p)
	return ok && c.AddonResolveConflicts
}
