package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	opsv1 "github.com/tidbcloud/ops-server/operator/api/v1alpha1"
)

func TestValidateKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ValidateKey("")).To(BeNil())
	g.Expect(ValidateKey(strings.Repeat("k", 255))).To(BeNil())
	err := ValidateKey(strings.Repeat("k", 256))
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Code).To(Equal(http.StatusBadRequest))
	g.Expect(err.Message).To(Equal("invalid Idempotency-Key"))
	g.Expect(err.Violations).To(HaveLen(1))
	g.Expect(err.Violations[0].Field).To(Equal("Idempotency-Key"))
	g.Expect(err.Violations[0].Description).To(Equal("must be at most 255 characters"))
}

func TestKeyFrom(t *testing.T) {
	g := NewWithT(t)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	key, err := KeyFrom(r)
	g.Expect(err).To(BeNil())
	g.Expect(key).To(BeEmpty(), "no header, no key")

	r.Header.Set(Header, "nightly-1")
	key, err = KeyFrom(r)
	g.Expect(err).To(BeNil())
	g.Expect(key).To(Equal("nightly-1"))

	r.Header.Set(Header, strings.Repeat("k", 256))
	key, err = KeyFrom(r)
	g.Expect(err).NotTo(BeNil())
	g.Expect(err.Violations[0].Field).To(Equal(Header))
	g.Expect(key).To(BeEmpty())
}

func TestSetName(t *testing.T) {
	g := NewWithT(t)

	cm := &corev1.ConfigMap{}
	SetName(cm, "backup-", "vmcluster", "k1")
	g.Expect(cm.Name).To(Equal(Name("backup-", "k1")), "named after the key")
	g.Expect(cm.GenerateName).To(BeEmpty())
	g.Expect(cm.Annotations).To(Equal(map[string]string{opsv1.AnnotationIdempotencyKey: "k1"}))

	cm = &corev1.ConfigMap{}
	SetName(cm, "backup-", "vmcluster", "")
	g.Expect(cm.Name).To(BeEmpty())
	g.Expect(cm.GenerateName).To(Equal("backup-vmcluster-"), "named by the API server after the vmcluster")
	g.Expect(cm.Annotations).To(BeNil())

	long := strings.Repeat("a", 49) + "-bcd" // 53, the longest vmcluster name
	for _, prefix := range []string{"backup-", "restore-", "op-"} {
		cm = &corev1.ConfigMap{}
		SetName(cm, prefix, long, "")
		gn := cm.GenerateName
		g.Expect(len(gn)+5).To(BeNumerically("<=", 63), prefix)
		g.Expect(validation.IsDNS1123Label(gn+"x7k2p")).To(BeEmpty(), prefix)
		g.Expect(gn).NotTo(HaveSuffix("--"), "cut, without a trailing double dash")
	}
	cm = &corev1.ConfigMap{}
	SetName(cm, "backup-", long, "")
	g.Expect(cm.GenerateName).To(Equal("backup-"+strings.Repeat("a", 49)+"-"), "cut, without a trailing double dash")
	cm = &corev1.ConfigMap{}
	SetName(cm, "op-", long, "")
	g.Expect(cm.GenerateName).To(Equal("op-"+long+"-"), "53 characters fit after op-")
}
