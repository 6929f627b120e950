package locknode

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRWStatuses(t *testing.T) {
	w := func(seq int32, sess int64, aversion int32) RWNode {
		return RWNode{Contender: Contender{Name: "h-W-" + string(rune('0'+seq)), Seq: seq, Kind: "W"}, Session: sess, ACLVersion: aversion}
	}
	r := func(seq int32, sess int64, tag string) RWNode {
		return RWNode{Contender: Contender{Name: "h-R-" + string(rune('0'+seq)), Seq: seq, Kind: "R"}, Session: sess, Tag: tag}
	}
	const H, W, K = RWHolds, RWWaits, RWKept
	for _, tc := range []struct {
		name string
		ns   []RWNode
		want []RWStatus
	}{
		{"readers until the first writer", []RWNode{r(0, 1, ""), r(1, 2, ""), w(2, 3, 0), r(3, 4, "")}, []RWStatus{H, H, W, W}},
		{"first writer holds", []RWNode{w(0, 1, 0), w(1, 2, 0), r(2, 3, "")}, []RWStatus{H, W, W}},
		{"downgrade: both held", []RWNode{w(0, 1, 0), r(1, 1, DowngradeTag)}, []RWStatus{H, H}},
		{"downgrade, writer between, write held", []RWNode{w(0, 1, 0), w(1, 2, 0), r(2, 1, DowngradeTag)}, []RWStatus{H, W, H}},
		{"downgrade, writer between, write released: kept", []RWNode{w(0, 1, 1), r(1, 2, ""), w(2, 2, 0), r(3, 1, DowngradeTag), r(4, 3, "")}, []RWStatus{K, W, W, H, W}},
		{"downgrade alone after the write release", []RWNode{r(0, 1, DowngradeTag), w(1, 2, 0)}, []RWStatus{H, W}},
		{"ACL changed, no downgrade of its session: holds", []RWNode{w(0, 1, 1), r(1, 2, DowngradeTag)}, []RWStatus{H, W}},
		{"kept write node deleted: the writer between holds, the downgrade waits", []RWNode{w(1, 2, 0), r(2, 1, DowngradeTag)}, []RWStatus{H, W}},
		{"write node deleted, its session's writer behind a reader", []RWNode{r(1, 3, ""), w(2, 1, 0), r(3, 1, DowngradeTag)}, []RWStatus{H, W, W}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, RWStatuses(tc.ns)) })
	}
}
