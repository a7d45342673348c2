package docshell

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestParse(t *testing.T) {
	g := NewWithT(t)
	page := "# Title\n\n<!-- test: skip the suite's stack runs already -->\n```sh\nmake dev\n```\n\n" +
		"```sh\nexport A=1\necho $A\n```\n\nOutput:\n\n```\n\"status\":\"RUNNING\"\n```\n\n" +
		"<!-- test: wait 3m \"status\":\"RUNNING\" -->\n```sh\ncurl -s x\n```\n" +
		"<!-- test: fails required -->\n```sh\nkubectl apply -f - <<'YAML'\nkind: X\nYAML\n```\n" +
		"<!-- test: expect ^ok -->\n```sh\necho ok\n```\n```json\n{}\n```\n"
	blocks, err := Parse(page)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(blocks).To(HaveLen(5))
	g.Expect(blocks[0].Mode).To(Equal(ModeSkip))
	g.Expect(blocks[0].Reason).To(Equal("the suite's stack runs already"))
	g.Expect(blocks[0].Script).To(Equal("make dev"))
	g.Expect(blocks[0].Line).To(Equal(4))
	g.Expect(blocks[1].Mode).To(Equal(ModeRun))
	g.Expect(blocks[1].Script).To(Equal("export A=1\necho $A"))
	g.Expect(blocks[2].Mode).To(Equal(ModeWait))
	g.Expect(blocks[2].Timeout).To(Equal(3 * time.Minute))
	g.Expect(blocks[2].Pattern.MatchString(`{"status":"RUNNING"}`)).To(BeTrue())
	g.Expect(blocks[3].Mode).To(Equal(ModeFails))
	g.Expect(blocks[3].FirstLine()).To(Equal("kubectl apply -f - <<'YAML'"))
	g.Expect(blocks[4].Mode).To(Equal(ModeExpect))
}

func TestParseRefusesBadMarkers(t *testing.T) {
	for name, page := range map[string]string{
		"unknown kind":          "<!-- test: maybe x -->\n```sh\ntrue\n```\n",
		"skip without reason":   "<!-- test: skip -->\n```sh\ntrue\n```\n",
		"wait without duration": "<!-- test: wait RUNNING -->\n```sh\ntrue\n```\n",
		"bad pattern":           "<!-- test: expect ( -->\n```sh\ntrue\n```\n",
		"marker before text":    "<!-- test: expect x -->\nprose\n```sh\ntrue\n```\n",
		"marker before json":    "<!-- test: expect x -->\n```json\n{}\n```\n",
		"unterminated":          "```sh\ntrue\n",
		"dangling marker":       "```sh\ntrue\n```\n<!-- test: expect x -->\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(page)
			NewWithT(t).Expect(err).To(HaveOccurred())
		})
	}
}
